package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/runfiles"
)

// TestRunEndsOnSignal: SIGTERM to a `levee lab` whose ctx is tied to
// SIGTERM (signal.NotifyContext, as cmd/levee does) ends Run and stops the
// lab. Bubble Tea's own signal handler sends its QuitMsg without watching
// the program's context (bubbletea v1.3.10, tea.go handleSignals): when
// the same signal cancelled ctx first, the event loop was gone, the send
// blocked, and Run hung in the program's shutdown with every child still
// running and the keys dead. Each round is a race, so it plays several.
func TestRunEndsOnSignal(t *testing.T) {
	// The test process must not die of the signals it sends itself, also
	// between rounds, when no Run listens.
	guard := make(chan os.Signal, 16)
	signal.Notify(guard, syscall.SIGTERM)
	defer signal.Stop(guard)
	for round := 0; round < 12; round++ {
		f := newFake()
		f.ch = make(chan runfiles.Sample) // a send returns once the dashboard reads it
		ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- Run(ctx, f, pr, io.Discard, WithStopTimeout(time.Second)) }()
		// The first Sample read: the program runs, its handlers are set.
		f.ch <- fixedSamples()[0]
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("round %d: Run = %v", round, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: Run still running 20 s after SIGTERM (calls %q)", round, f.Calls())
		}
		f.mu.Lock()
		stopped := f.stopped
		f.mu.Unlock()
		if !stopped {
			t.Errorf("round %d: the lab was not stopped", round)
		}
		cancel()
		pw.Close()
	}
}

// TestRunEndsOnHangup: closing the terminal (SIGHUP) stops the lab like q.
// Nothing watched SIGHUP: its default action ended the process at once —
// children killed by the kernel, not stopped, the recording without its
// summary, the work folder left in /tmp (seen with tmux kill-session).
func TestRunEndsOnHangup(t *testing.T) {
	guard := make(chan os.Signal, 4) // without Run's handler the test process would die
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)
	f := newFake()
	f.ch = make(chan runfiles.Sample)
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), f, pr, io.Discard, WithStopTimeout(time.Second)) }()
	f.ch <- fixedSamples()[0] // the program runs
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still running 20 s after SIGHUP")
	}
	if got := f.Calls(); len(got) != 1 || got[0] != "Stop(deadline=true)" {
		t.Errorf("calls %q, want one Stop", got)
	}
}

// TestRunSecondSignalKills: SIGINT starts the lab's stop; a second SIGINT
// while it stops (here a Stop that would wait ten minutes) calls WithKill's
// kill once and Run returns ErrKilled at once. Before, Run's own signal
// watch swallowed every later signal while it waited for Stop.
func TestRunSecondSignalKills(t *testing.T) {
	guard := make(chan os.Signal, 4) // without Run's handler the test process would die
	signal.Notify(guard, syscall.SIGINT)
	defer signal.Stop(guard)
	f := newFake()
	f.ch = make(chan runfiles.Sample)
	stopping, release := make(chan struct{}), make(chan struct{})
	f.onStop = func() {
		close(stopping)
		<-release // a stop held up (children that do not end)
	}
	var kills atomic.Int32
	kill := func() {
		kills.Add(1)
		close(release) // the children are gone: the stop ends
		// A kill takes a while (SIGKILL to each child, then reaping them):
		// the stop it ended returns before it does, and Run returned that
		// stop's nil as if the lab had stopped cleanly.
		time.Sleep(100 * time.Millisecond)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), f, pr, io.Discard, WithStopTimeout(10*time.Minute), WithKill(kill))
	}()
	f.ch <- fixedSamples()[0] // the program runs
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopping:
	case <-time.After(20 * time.Second):
		t.Fatal("the first SIGINT did not stop the lab")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrKilled) {
			t.Errorf("Run = %v, want ErrKilled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still waiting for the stop 20 s after the second SIGINT")
	}
	if n := kills.Load(); n != 1 {
		t.Errorf("kill called %d times, want once", n)
	}
}
