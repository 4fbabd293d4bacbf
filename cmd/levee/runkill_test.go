package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunSecondInterruptKills: the first SIGINT to levee run stops the
// run; a second one while that stop waits — here on requests in flight
// on frozen (SIGSTOPped) children — kills every child at once (SIGKILL to
// their process groups), and levee run exits 130 saying so. Before, the
// second interrupt was swallowed: levee run waited for the requests in
// flight, up to the client timeout (5 min here), whatever the user
// pressed.
func TestRunSecondInterruptKills(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a whole lab")
	}
	bin := buildLevee(t)
	dir := t.TempDir()
	expFile := filepath.Join(dir, "slow-stop.yaml")
	if err := os.WriteFile(expFile, []byte(slowStopExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--out", filepath.Join(dir, "run"), expFile)
	cmd.Dir = dir
	var children []int
	p := startRunProc(t, cmd)
	t.Cleanup(func() { // runs before startRunProc's: leave nothing frozen behind
		for _, pid := range children {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// A progress line with traffic: every child is up and serving.
	p.waitLine(t, "progress line with traffic", hasTraffic)
	freezeChildren(t, bin, &children)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, "the run stopping", func(l string) bool { return strings.Contains(l, "finishing (stopped)") })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	status := p.wait(t, "the second interrupt")
	stderr := &p.stderr
	if status != 130 {
		t.Errorf("levee run: exit status %d, want 130; stderr:\n%s", status, stderr.String())
	}
	if !strings.Contains(stderr.String(), "second interrupt: every child process killed") {
		t.Errorf("stderr does not say the children were killed:\n%s", stderr.String())
	}
	for _, pid := range children {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("child %d (%v) still exists after the second interrupt", pid, cmdline(pid))
		}
	}
}

// TestRunInterruptWhileStarting: an interrupt while the lab starts —
// here it waits for a redis-server that never answers — cancels the
// start: the child it waits for is killed and levee run exits 130 saying
// so. Before, the signal handler was installed only once the lab had
// started: the interrupt killed levee run outright (no message, killed by
// the signal), its children going only by their parent-death signal.
func TestRunInterruptWhileStarting(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a lab")
	}
	bin := buildLevee(t)
	dir := t.TempDir()
	fakeBin := filepath.Join(dir, "bin")
	if err := os.Mkdir(fakeBin, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "redis-pid")
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %q.tmp && mv %q.tmp %q\nexec sleep 600\n", pidFile, pidFile, pidFile)
	if err := os.WriteFile(filepath.Join(fakeBin, "redis-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	expFile := filepath.Join(dir, "hung-redis.yaml")
	if err := os.WriteFile(expFile, []byte("name: hung-redis\nduration: 1m\nredis: server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--out", filepath.Join(dir, "run"), expFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder // read after Wait
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var werr error
	go func() {
		werr = cmd.Wait()
		close(exited)
	}()
	var redisPID int
	t.Cleanup(func() {
		if redisPID > 0 {
			_ = syscall.Kill(redisPID, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		<-exited
	})
	// Hang guards only: each wait ends on an event long before them.
	deadline := time.Now().Add(time.Minute)
	for redisPID == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			redisPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		select {
		case <-exited:
			t.Fatalf("levee run ended before starting redis-server: %v\n%s", werr, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake redis-server never started")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("levee run still starting a minute after the interrupt")
	}
	if ee, ok := werr.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("levee run: %v, want exit status 130; stderr:\n%s", werr, stderr.String())
	}
	if !strings.Contains(stderr.String(), "levee run: interrupted while the lab started") {
		t.Errorf("stderr does not say the start was interrupted:\n%s", stderr.String())
	}
	if err := syscall.Kill(redisPID, 0); err == nil {
		t.Errorf("the redis-server child %d is still there", redisPID)
	}
}

// TestRunHangup: SIGHUP — the terminal levee run ran in closed — stops
// the run as Ctrl-C does: the run folder gets its summary. Before, SIGHUP
// killed levee run outright (the signal's default action), its children
// going by their parent-death signal and the folder left without a
// summary. Under nohup (SIGHUP ignored when levee run starts) it is still
// ignored: the run goes on.
func TestRunHangup(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a lab")
	}
	bin := buildLevee(t)
	if signal.Ignored(syscall.SIGHUP) {
		// This test runs under nohup (or a runner that ignores SIGHUP), and
		// its children would inherit that. Watching SIGHUP here un-ignores
		// it; a child starts with a watched signal at its default action.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		t.Cleanup(func() { signal.Stop(hup) })
	}
	for _, nohup := range []bool{false, true} {
		t.Run(map[bool]string{false: "terminal", true: "nohup"}[nohup], func(t *testing.T) {
			dir := t.TempDir()
			expFile := filepath.Join(dir, "slow-stop.yaml")
			if err := os.WriteFile(expFile, []byte(slowStopExperiment), 0o644); err != nil {
				t.Fatal(err)
			}
			runDir := filepath.Join(dir, "run")
			// sh execs levee run in its own place, so the signal reaches
			// levee run itself; trap '' HUP is how nohup starts it.
			trap := ""
			if nohup {
				trap = "trap '' HUP; "
			}
			cmd := exec.Command("sh", "-c", trap+`exec "$0" run --out "$1" "$2"`, bin, runDir, expFile)
			cmd.Dir = dir
			p := startRunProc(t, cmd)
			at, _ := progressTime(p.waitLine(t, "progress line with traffic", hasTraffic))
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			if nohup {
				// Two more seconds of traffic and no stop: the hangup was ignored.
				p.waitLine(t, "progress 2 s later", func(l string) bool {
					if strings.Contains(l, "finishing") {
						t.Fatalf("the run stopped on an ignored SIGHUP: %q", l)
					}
					next, ok := progressTime(l)
					return ok && next >= at+2*time.Second
				})
				if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			p.waitLine(t, "the run stopping", func(l string) bool { return strings.Contains(l, "finishing (stopped)") })
			status := p.wait(t, "the signal")
			if status != 0 && status != 1 { // 1: a threshold failed or the report could not be printed
				t.Errorf("levee run: exit status %d, want 0 or 1; stderr:\n%s", status, p.stderr.String())
			}
			if _, err := os.Stat(filepath.Join(runDir, "summary.json")); err != nil {
				t.Errorf("the run folder has no summary: %v; stderr:\n%s", err, p.stderr.String())
			}
		})
	}
}
