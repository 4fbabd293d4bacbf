package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
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
