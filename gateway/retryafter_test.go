package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
)

// TestRetryAfterSeconds: whole seconds rounded up, at least 1, at most a
// day (RFC 9110 delay-seconds).
func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{0, 1}, {-time.Second, 1}, {time.Millisecond, 1}, {time.Second, 1},
		{time.Second + time.Nanosecond, 2}, {2500 * time.Millisecond, 3}, {1000 * time.Hour, 86400},
	} {
		if got := retryAfterSeconds(tc.d); got != tc.want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// TestDurationEWMA: the first sample is the mean; later ones move it by
// an eighth of the difference; no sample, no mean; a zero wait is a sample.
func TestDurationEWMA(t *testing.T) {
	var e durationEWMA
	if _, ok := e.mean(); ok {
		t.Fatal("mean before any sample")
	}
	if got := retryAfterOf(&e); got != 1 {
		t.Errorf("Retry-After before any sample = %d, want 1", got)
	}
	e.observe(3 * time.Second)
	if m, ok := e.mean(); !ok || m != 3*time.Second {
		t.Fatalf("mean after 3s = %v %v", m, ok)
	}
	if got := retryAfterOf(&e); got != 3 {
		t.Errorf("Retry-After of a 3 s wait = %d, want 3", got)
	}
	e.observe(11 * time.Second)
	if m, _ := e.mean(); m != 4*time.Second {
		t.Errorf("mean after 3s, 11s = %v, want 4s", m)
	}
	var z durationEWMA
	z.observe(0)
	if m, ok := z.mean(); !ok || m != 0 {
		t.Errorf("a zero sample: mean %v %v, want 0 true", m, ok)
	}
}

// TestQueueWaitsCountWhatMoves: the Retry-After of a queue shed is the
// mean of the waits that ended with a slot or at queue_timeout
// (docs/CONTRACTS.md); a refusal at a full queue (or a displaced request)
// did not wait for its place, and a request whose deadline passed or
// whose client left says nothing of how the queue moves: neither feeds
// the mean. Each case starts from a 1 s mean and adds a 9 s wait.
func TestQueueWaitsCountWhatMoves(t *testing.T) {
	for _, tc := range []struct {
		err    error
		counts bool
	}{
		{nil, true},
		{admit.ErrQueueTimeout, true},
		{fmt.Errorf("ai: %w", admit.ErrQueueTimeout), true},
		{admit.ErrQueueFull, false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
	} {
		var g Gateway
		g.noteQueueWait(classAI, time.Second, nil)
		g.noteQueueWait(classAI, 9*time.Second, tc.err)
		want := time.Second
		if tc.counts {
			want = 2 * time.Second // 1 s + (9 s − 1 s)/8
		}
		if m, _ := g.queueWaits[classAI].mean(); m != want {
			t.Errorf("a 9 s wait ending in %v: mean %v, want %v", tc.err, m, want)
		}
		if m, ok := g.queueWaits[classStandard].mean(); ok {
			t.Errorf("class standard's mean %v after waits of class ai", m)
		}
	}
}
