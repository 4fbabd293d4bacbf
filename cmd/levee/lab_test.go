package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLabWithoutTerminal: with non-TTY stdin/stdout, `levee lab` says why,
// hints at `levee run`, starts nothing and exits 2; a bad argument is
// reported as itself first (it read "needs a terminal" and pointed at a
// levee run that fails the same way; a negative --stop-timeout was taken).
func TestLabWithoutTerminal(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  []string
		notErr   string // stderr must not contain it
	}{
		{name: "no args", args: nil, wantCode: 2, wantErr: []string{"needs a terminal", "levee run EXPERIMENT.yaml"}},
		{name: "experiment", args: []string{"../../experiments/03-priority-shedding.yaml"}, wantCode: 2,
			wantErr: []string{"needs a terminal", "levee run ../../experiments/03-priority-shedding.yaml"}},
		{name: "lesson", args: []string{"03"}, wantCode: 2, wantErr: []string{"needs a terminal", "levee run 03"}},
		// A bad argument is reported as itself, not behind the terminal hint.
		{name: "no such experiment", args: []string{"nosuch.yaml"}, wantCode: 2, wantErr: []string{"nosuch.yaml: no such file"}, notErr: "terminal"},
		{name: "folder", args: []string{"."}, wantCode: 2, wantErr: []string{". is a folder"}, notErr: "terminal"},
		{name: "negative --stop-timeout", args: []string{"--stop-timeout", "-1s"}, wantCode: 2, wantErr: []string{"--stop-timeout -1s: want > 0"}, notErr: "terminal"},
		{name: "--runs is a file", args: []string{"--runs", "lab_test.go"}, wantCode: 2, wantErr: []string{"--runs lab_test.go: not a folder"}, notErr: "terminal"},
		{name: "two files", args: []string{"a.yaml", "b.yaml"}, wantCode: 2, wantErr: []string{"at most one experiment"}},
		{name: "bad flag", args: []string{"--nope"}, wantCode: 2, wantErr: []string{"flag provided but not defined"}},
		{name: "help", args: []string{"--help"}, wantCode: 0, wantErr: []string{"Usage: levee lab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdin bytes.Buffer
			var stdout, stderr bytes.Buffer
			code := runLab(tt.args, &stdin, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if tt.notErr != "" && strings.Contains(stderr.String(), tt.notErr) {
				t.Errorf("stderr says %q:\n%s", tt.notErr, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout should stay empty, got %q", stdout.String())
			}
		})
	}
}

// TestLeveeNoArgsIsLab: `levee` with no command runs lab (here: no terminal).
func TestLeveeNoArgsIsLab(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch(nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "levee run") {
		t.Errorf("levee with no args: code %d, stderr %q; want 2 and the levee run hint", code, stderr.String())
	}
}

// TestLabInTmux runs `levee lab` in a real terminal (a private tmux server,
// 160×48), waits for the charts to fill, toggles fault 1, switches a
// defense on, raises the rate, and reads the screen after each key to see
// the change; then q must stop every child and exit 0.
func TestLabInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the tmux end-to-end test starts the whole lab")
	}
	dir := t.TempDir()
	tmux := privateTmux(t, dir)
	bin := buildLevee(t)
	// The exit status goes to a file: the pane may be gone by the time we
	// ask tmux for it on a loaded machine.
	exitFile := filepath.Join(dir, "exit-status")
	script := fmt.Sprintf("TERM=xterm-256color %q lab --runs %q; echo $? > %q; sleep 30",
		bin, filepath.Join(dir, "runs"), exitFile)
	if out, err := tmux("new-session", "-d", "-s", "e2e", "-x", "160", "-y", "48", "-c", dir, "sh", "-c", script); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	labExited := func() bool { _, err := os.Stat(exitFile); return err == nil }
	t.Cleanup(func() {
		if !labExited() { // stop the lab the way a person would
			_, _ = tmux("send-keys", "-t", "e2e", "q")
			waitScreen(t, tmux, 40*time.Second, "the lab to exit", func(string) bool { return labExited() })
		}
		_, _ = tmux("kill-server")
	})
	keys := func(k ...string) {
		t.Helper()
		if out, err := tmux(append([]string{"send-keys", "-t", "e2e"}, k...)...); err != nil {
			t.Fatalf("send-keys %v: %v\n%s", k, err, out)
		}
	}

	// Charts fill: offered and goodput measured above zero.
	screen := waitScreen(t, tmux, 90*time.Second, "charts with traffic", func(s string) bool {
		return legendValue(s, "offered") > 0 && legendValue(s, "goodput") > 0
	})

	// Fault 1 toggles on, then off.
	m := regexp.MustCompile(`\[1\] (\w+)`).FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no fault on key 1 in the faults row:\n%s", screen)
	}
	fault := m[1]
	active := regexp.MustCompile(`\[1\] ` + fault + ` ●`)
	keys("1")
	waitScreen(t, tmux, 30*time.Second, "fault "+fault+" active", active.MatchString)
	keys("1")
	waitScreen(t, tmux, 30*time.Second, "fault "+fault+" reverted", func(s string) bool { return !active.MatchString(s) })

	// Defenses panel: the first defense (ratelimit, off by default) turns on.
	keys("d")
	s := waitScreen(t, tmux, 10*time.Second, "the defenses panel", func(s string) bool { return strings.Contains(s, "space toggle") })
	on := strings.Contains(s, "[x] ratelimit")
	keys("Enter")
	want := fmt.Sprintf("defense ratelimit %s", map[bool]string{true: "off", false: "on"}[on])
	waitScreen(t, tmux, 10*time.Second, want, func(s string) bool { return strings.Contains(s, want) })
	keys("Escape")
	waitScreen(t, tmux, 10*time.Second, "the panel closed, header shows RL", func(s string) bool {
		hdr := strings.SplitN(s, "\n", 2)[0]
		return !strings.Contains(s, "space toggle") && strings.Contains(hdr, " RL ") != on
	})

	// Rate up: the header's target grows by about ×1.25.
	before := headerTarget(waitScreen(t, tmux, 10*time.Second, "a target rate", func(s string) bool { return headerTarget(s) > 0 }))
	keys("Up")
	waitScreen(t, tmux, 10*time.Second, fmt.Sprintf("target above %.0f", before*1.15), func(s string) bool {
		return headerTarget(s) > before*1.15
	})

	// q stops the lab cleanly: exit status 0 and no child left.
	keys("q")
	waitScreen(t, tmux, 40*time.Second, "the lab to exit", func(string) bool { return labExited() })
	if st, _ := os.ReadFile(exitFile); strings.TrimSpace(string(st)) != "0" {
		out, _ := tmux("capture-pane", "-p", "-t", "e2e")
		t.Errorf("levee lab exited with status %q:\n%s", strings.TrimSpace(string(st)), out)
	}
	if left := processesOf(bin); len(left) > 0 {
		t.Errorf("processes of %s still running after quit: %v", bin, left)
	}
}

// processesOf lists the pids whose executable is bin (Linux /proc; none
// elsewhere).
func processesOf(bin string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if exe, err := os.Readlink(filepath.Join(d, "exe")); err == nil && exe == bin {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// waitScreen polls the pane until ok(screen) or the timeout, and returns the
// screen that satisfied it.
func waitScreen(t *testing.T, tmux func(...string) (string, error), d time.Duration, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(d)
	var s string
	for time.Now().Before(deadline) {
		s, _ = tmux("capture-pane", "-p", "-t", "e2e")
		if ok(s) {
			return s
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("waited %s for %s; screen:\n%s", d, what, s)
	return s
}

var numRE = `([0-9]+(?:\.[0-9]+)?)(k?)`

// legendValue reads a chart legend value such as "━ offered   1.2k/s" —
// or, without colours, "⠒⠂ offered   1.2k/s", the series' dash sample
// (two cells of braille or a blank) in place of the line: the lab draws
// that when the terminal has no colours, as under CI set (termenv then
// takes the output for no terminal) or NO_COLOR.
func legendValue(screen, name string) float64 {
	m := regexp.MustCompile(`(?:━|[\x{2800}-\x{28FF}][\x{2800}-\x{28FF} ]) ` + name + `\s+` + numRE).FindStringSubmatch(screen)
	if m == nil {
		return -1
	}
	return parseNum(m[1], m[2])
}

// headerTarget reads "target 400/s" (wide) or "target 400 → 398/s" (narrow).
func headerTarget(screen string) float64 {
	hdr := strings.SplitN(screen, "\n", 2)[0]
	m := regexp.MustCompile(`target ` + numRE).FindStringSubmatch(hdr)
	if m == nil {
		return -1
	}
	return parseNum(m[1], m[2])
}

func parseNum(n, k string) float64 {
	v, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return -1
	}
	if k == "k" {
		v *= 1000
	}
	return v
}

// privateTmux skips the test when tmux is not installed — except in CI
// (CI set), where that fails it: scripts/test.sh installs tmux, so a
// skip there would hide the end-to-end tests — and returns a runner for
// a tmux server of the test's own, its socket in dir (no config file
// read), so tests never touch the user's sessions.
func privateTmux(t *testing.T, dir string) func(args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed and CI is set: scripts/test.sh installs it (apt-get install -y tmux)")
		}
		t.Skip("tmux is not installed (scripts/test.sh installs it)")
	}
	sock := filepath.Join(dir, "tmux.sock")
	return func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
}
