package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
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
	stderrR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var children []int
	exited := make(chan struct{}) // closed once cmd.Wait returned werr
	var werr error
	t.Cleanup(func() {
		for _, pid := range children { // whatever happened, leave nothing frozen behind
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		<-exited
	})
	lines := make(chan string, 1024)
	var stderr strings.Builder // read only after lines is closed
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderrR)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			select {
			case lines <- sc.Text():
			default: // nobody waits for lines any more
			}
		}
	}()
	go func() {
		werr = cmd.Wait()
		close(exited)
	}()
	// Hang guards only: each wait ends on an event long before them.
	waitLine := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		for {
			select {
			case l, open := <-lines:
				if !open {
					t.Fatalf("levee run ended while waiting for %s", what)
				}
				if ok(l) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s on stderr", what)
			}
		}
	}
	// A progress line with traffic: every child is up and serving.
	waitLine("progress line with traffic", func(l string) bool {
		f := strings.Fields(l) // "t=  2.3s target 20/s offered 19/s ok …"
		for i := 0; i+1 < len(f); i++ {
			if f[0] == "t=" && f[i] == "offered" {
				return f[i+1] != "0/s"
			}
		}
		return false
	})
	freezeChildren(t, bin, &children)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitLine("the run stopping", func(l string) bool { return strings.Contains(l, "finishing (stopped)") })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		t.Fatal("levee run still running 2 min after the second interrupt")
	}
	for range lines { // stderr read to its end
	}
	if ee, ok := werr.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("levee run: %v, want exit status 130; stderr:\n%s", werr, stderr.String())
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
