package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const launcherExperiment = `
name: %s
duration: forever
stages: [{duration: 1s, target: 20}]
mix: {routes: {predict: 1}}
nodes: {count: 2, knobs: {slots: 4, latency: {dist: fixed, fixed_ms: 20}}}
narration:
  - {at: 0s, kind: watch, text: "%s"}
`

// A switch stops every child of the old lab and removes its work folder
// before the new lab starts; Close stops the last one; nothing survives.
func TestLauncherSwitchLeavesNothingBehind(t *testing.T) {
	s := NewLauncher(Options{Executable: leveeBin})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := s.Launch(ctx, mustParse(t, fmt.Sprintf(launcherExperiment, "first", "one")))
	if err != nil {
		t.Fatal(err)
	}
	oldPIDs, oldWork := first.ChildPIDs(), first.workDir
	if len(oldPIDs) != 3 {
		t.Fatalf("first lab children %v", oldPIDs)
	}
	<-first.Samples() // running

	second, err := s.Launch(ctx, mustParse(t, fmt.Sprintf(launcherExperiment, "second", "two")))
	if err != nil {
		t.Fatal(err)
	}
	// Launch returned: the old children are gone already, not soon.
	for name, pid := range oldPIDs {
		if !processGone(pid) {
			t.Errorf("%s (pid %d) of the first lab survived the switch", name, pid)
		}
	}
	if _, err := os.Stat(oldWork); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the first lab's work folder %s is left behind (%v)", oldWork, err)
	}
	if s.Current() != second {
		t.Error("the second lab is not current")
	}
	newPIDs := second.ChildPIDs()
	for name, pid := range newPIDs {
		if processGone(pid) {
			t.Errorf("%s (pid %d) of the second lab is not running", name, pid)
		}
	}
	if _, ok := <-second.Samples(); !ok {
		t.Error("the second lab delivers no samples")
	}
	if ls := second.Lesson(); ls.Text != "two" {
		t.Errorf("the second lab shows %+v", ls)
	}

	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, newPIDs, 5*time.Second)
	if _, err := s.Launch(ctx, mustParse(t, fmt.Sprintf(launcherExperiment, "third", "three"))); !errors.Is(err, ErrLauncherClosed) {
		t.Errorf("Launch after Close: %v", err)
	}
	if s.Current() != nil {
		t.Error("a lab is current after Close")
	}
}

// A lesson that fails to open leaves no lab running: the old one was
// stopped first, and the error says why.
func TestLauncherFailedLaunch(t *testing.T) {
	s := NewLauncher(Options{Executable: leveeBin})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := s.Launch(ctx, mustParse(t, fmt.Sprintf(launcherExperiment, "first", "one")))
	if err != nil {
		t.Fatal(err)
	}
	pids := first.ChildPIDs()
	if _, err := s.Launch(ctx, nil); err == nil {
		t.Fatal("a nil experiment launched")
	}
	waitGone(t, pids, time.Second)
	if s.Current() != nil {
		t.Error("a lab is current after a failed launch")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// Kill during a Close held up by children that do not end (SIGSTOP: each
// waits out its grace) SIGKILLs every child's process group at once —
// each is gone when Kill returns —, removes the work folder, lets Close
// return, and refuses further launches.
func TestLauncherKillDuringClose(t *testing.T) {
	s := NewLauncher(Options{Executable: leveeBin})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := s.Launch(ctx, mustParse(t, fmt.Sprintf(launcherExperiment, "frozen", "one")))
	if err != nil {
		t.Fatal(err)
	}
	<-l.Samples() // running
	pids, work := l.ChildPIDs(), l.workDir
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctx) }()
	<-l.ending // the stop has begun
	s.Kill()
	for name, pid := range pids {
		if !processGone(pid) {
			t.Errorf("%s (pid %d) still running when Kill returned", name, pid)
		}
	}
	if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work folder %s left behind (%v)", work, err)
	}
	select {
	case <-closed: // its error, if any, is the recording's: there is none
	case <-time.After(time.Minute):
		t.Fatal("Close still waiting a minute after Kill")
	}
	if _, err := s.Launch(ctx, mustParse(t, fmt.Sprintf(launcherExperiment, "after", "two"))); !errors.Is(err, ErrLauncherClosed) {
		t.Errorf("Launch after Kill: %v", err)
	}
}

// A Kill or a Close while a lesson switch is still opening its lab (here
// its gateway never prints its ready line) does not wait for the opening:
// it cancels it. When Kill returns, every child the opening started — the
// nodes, ready, and the gateway it waits for — is gone, process group and
// all, and the lab's temporary work folder is removed; a Close returns as
// promptly; the Launch says the launcher was closed.
func TestLauncherKillDuringOpen(t *testing.T) {
	for _, how := range []string{"kill", "close"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			tmp := filepath.Join(dir, "tmp") // the lab's work folder goes here
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TMPDIR", tmp)
			// The children are real processes: the nodes this test's levee,
			// the gateway a process that never becomes ready.
			exe := filepath.Join(dir, "levee-stuck-gateway")
			script := fmt.Sprintf("#!/bin/sh\necho $$ >> %q\nif [ \"$1\" = gateway ]; then touch %q; exec sleep 600; fi\nexec %q \"$@\"\n",
				filepath.Join(dir, "pids"), filepath.Join(dir, "gateway-started"), leveeBin)
			if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			var pids []int
			t.Cleanup(func() {
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			s := NewLauncher(Options{Executable: exe, ReadyTimeout: 10 * time.Minute})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			launched := make(chan error, 1)
			go func() {
				_, err := s.Launch(ctx, mustParse(t, fmt.Sprintf(launcherExperiment, "stuck", "one")))
				launched <- err
			}()
			// The nodes are ready and the gateway started: the opening waits
			// for its ready line.
			waitFile(t, filepath.Join(dir, "gateway-started"), launched)
			b, err := os.ReadFile(filepath.Join(dir, "pids"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
			if len(pids) != 3 {
				t.Fatalf("children %v, want two nodes and a gateway", pids)
			}
			if how == "kill" {
				s.Kill()
				for _, pid := range pids {
					if !processGone(pid) {
						t.Errorf("child pid %d still running when Kill returned", pid)
					}
				}
			} else {
				closed := make(chan error, 1)
				go func() { closed <- s.Close(ctx) }()
				select {
				case err := <-closed:
					if err != nil {
						t.Errorf("Close: %v", err)
					}
				case <-time.After(time.Minute):
					t.Fatal("Close still waiting a minute later for a lab that cannot open")
				}
				for _, pid := range pids {
					if !processGone(pid) {
						t.Errorf("child pid %d still running when Close returned", pid)
					}
				}
			}
			select {
			case err := <-launched:
				if !errors.Is(err, ErrLauncherClosed) {
					t.Errorf("Launch: %v, want ErrLauncherClosed", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("Launch still opening a minute after the launcher was " + how + "ed")
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "levee-lab-*")); len(left) > 0 {
				t.Errorf("work folder left behind: %v", left)
			}
			if s.Current() != nil {
				t.Error("a lab is current")
			}
		})
	}
}

// waitFile waits until path exists, failing if the launch ends first
// (its error) or a minute passes.
func waitFile(t *testing.T, path string, launched <-chan error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-launched:
			t.Fatalf("the launch ended before %s appeared: %v", path, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within a minute", path)
		}
	}
}
