package tui

import (
	"context"
	"io"
	"reflect"
	"testing"
	"time"
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
