package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowStopExperiment is a small lab (for levee lab and levee run); the
// tests freeze its children (freezeChildren) so that stopping it takes
// their whole grace, and a run's stop waits out its client timeout (5
// min): requests in flight on a frozen gateway end only then.
const slowStopExperiment = `name: slow-stop
duration: 10m
client_timeout: 5m
stages: [{duration: 1s, target: 20}]
mix: {routes: {predict: 1}}
nodes: {count: 2, knobs: {slots: 4, latency: {dist: fixed, fixed_ms: 20}}}
`

// TestLabSecondInterruptKills: in a real terminal (tmux), q starts the
// lab's stop; a ctrl+c while it stops — here held up by frozen children
// (SIGSTOP: each waits out its grace) — kills every child at once (SIGKILL to
// their process groups), removes the work folder, and levee lab exits 130
// with a message saying so. Before, the second ctrl+c only made the
// dashboard stop waiting: levee lab then waited for the stop again, up to
// --stop-timeout (15 s) twice, with every interrupt swallowed.
func TestLabSecondInterruptKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the tmux end-to-end test starts the whole lab")
	}
	dir := t.TempDir()
	tmux := privateTmux(t, dir)
	bin := buildLevee(t)
	expFile := filepath.Join(dir, "slow-stop.yaml")
	if err := os.WriteFile(expFile, []byte(slowStopExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpDir := filepath.Join(dir, "tmp") // the lab's work folder goes here
	if err := os.Mkdir(tmpDir, 0o755); err != nil {
		t.Fatal(err)
	}
	exitFile := filepath.Join(dir, "exit-status")
	script := fmt.Sprintf("TERM=xterm-256color TMPDIR=%q %q lab --stop-timeout 1m %q 2>%q; echo $? > %q; sleep 30",
		tmpDir, bin, expFile, filepath.Join(dir, "stderr"), exitFile)
	if out, err := tmux("new-session", "-d", "-s", "e2e", "-x", "160", "-y", "48", "-c", dir, "sh", "-c", script); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	labExited := func() bool { _, err := os.Stat(exitFile); return err == nil }
	var children []int
	t.Cleanup(func() {
		for _, pid := range children { // whatever happened, leave nothing frozen behind
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !labExited() {
			_, _ = tmux("send-keys", "-t", "e2e", "C-c")
			_, _ = tmux("send-keys", "-t", "e2e", "C-c")
		}
		_, _ = tmux("kill-server")
	})
	keys := func(k ...string) {
		t.Helper()
		if out, err := tmux(append([]string{"send-keys", "-t", "e2e"}, k...)...); err != nil {
			t.Fatalf("send-keys %v: %v\n%s", k, err, out)
		}
	}

	waitScreen(t, tmux, 90*time.Second, "charts with traffic", func(s string) bool {
		return legendValue(s, "offered") > 0
	})
	// Each child then takes its whole grace (gateways 3 s, then nodes 2 s)
	// to stop, and only SIGKILL ends it.
	freezeChildren(t, bin, &children)
	keys("q")
	waitScreen(t, tmux, 30*time.Second, "the lab stopping", func(s string) bool { return strings.Contains(s, "stopping…") })
	keys("C-c")
	waitScreen(t, tmux, 30*time.Second, "levee lab to exit after the second interrupt", func(string) bool { return labExited() })

	stderr, _ := os.ReadFile(filepath.Join(dir, "stderr"))
	if st, _ := os.ReadFile(exitFile); strings.TrimSpace(string(st)) != "130" {
		t.Errorf("levee lab exited with status %q, want 130; stderr:\n%s", strings.TrimSpace(string(st)), stderr)
	}
	if !bytes.Contains(stderr, []byte("second interrupt: every child process killed")) {
		t.Errorf("stderr does not say the children were killed:\n%s", stderr)
	}
	if left := processesOf(bin); len(left) > 0 {
		t.Errorf("processes of %s still running after the second interrupt: %v", bin, left)
	}
	if left, _ := filepath.Glob(filepath.Join(tmpDir, "levee-lab-*")); len(left) > 0 {
		t.Errorf("work folder left behind: %v", left)
	}
}

// freezeChildren SIGSTOPs slowStopExperiment's children of the levee
// process running bin (a gateway and two nodes; the lab's own process is
// the one running lab or run), noting each in *children first, for the
// caller's cleanup to SIGKILL whatever happens.
func freezeChildren(t *testing.T, bin string, children *[]int) {
	t.Helper()
	for _, p := range processesOf(bin) {
		pid, _ := strconv.Atoi(p)
		if args := cmdline(pid); len(args) > 1 && (args[1] == "gateway" || args[1] == "fakemodel") {
			*children = append(*children, pid)
		}
	}
	if len(*children) != 3 {
		t.Fatalf("children %v of %v, want a gateway and two nodes", *children, processesOf(bin))
	}
	for _, pid := range *children {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
}

// cmdline returns a process's arguments (Linux /proc; nil elsewhere).
func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
