package tui

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/syncbuf"
)

// TestRunStopsLabWhenCancelled: when the program ends without the q key
// (here: ctx cancelled), Run still stops the lab, with a deadline.
func TestRunStopsLabWhenCancelled(t *testing.T) {
	f := newFake()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe() // input that never sends a key
	defer pw.Close()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, f, pr, io.Discard, WithStopTimeout(time.Second)) }()
	for _, s := range fixedSamples()[:4] {
		f.ch <- s
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx was cancelled")
	}
	if got, want := f.Calls(), []string{"Stop(deadline=true)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
}

// TestRunQuitKey: q stops the lab once (Run does not stop it again) and
// Stop's error comes back from Run.
func TestRunQuitKey(t *testing.T) {
	f := newFake()
	f.failNext = errFake
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), f, pr, io.Discard) }()
	f.ch <- fixedSamples()[0]
	if _, err := pw.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !reflect.DeepEqual(f.Calls(), []string{"Stop(deadline=true)"}) {
			t.Fatalf("Run = %v, calls %q; want Stop's error and one Stop call", err, f.Calls())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after q")
	}
	pw.Close()
}

// TestRunPrintsShownErrorsWhole: an error the status line showed (cut
// there at its width, and gone once another message replaced it) is
// printed whole on the log's writer when the dashboard ends; the
// dashboard's own lines never went there before.
func TestRunPrintsShownErrorsWhole(t *testing.T) {
	f := newFake()
	long := errors.New("fault node_kill: revert failed: chaos: node_kill: restart node 0: node-0: exited before ready (exit status 1): listen tcp 127.0.0.1:40001: bind: address already in use")
	f.failNext = long
	var stderr syncbuf.Buffer
	log := NewLog(&stderr, nil)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), f, pr, io.Discard, WithLog(log)) }()
	f.ch <- fixedSamples()[0]
	// ↑ asks for a higher rate: the fake refuses it with the long error.
	for _, k := range []string{"\x1b[A", "q"} {
		if _, err := pw.Write([]byte(k)); err != nil {
			t.Fatal(err)
		}
		if k != "q" {
			waitCalls(t, f, 1)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after q")
	}
	pw.Close()
	if got := stderr.String(); !strings.Contains(got, "errors the dashboard showed, in full:\n") || !strings.Contains(got, long.Error()) {
		t.Errorf("stderr after the dashboard:\n%s\nwant the whole error %q", got, long)
	}
}

// waitCalls waits until the fake has recorded n mutating calls.
func waitCalls(t *testing.T, f *fakeControls, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(f.Calls()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("calls %q, want %d", f.Calls(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
