package admit

import (
	"context"
	"errors"
	"testing"
)

// TestRequeueEndedLeavesNoneParked: the last request in flight whose
// context ended as it gave its place back through Requeue leaves nothing
// in flight, so no Release will come for the requests parked before it:
// they go to the front of their queues at once, as when its requeue is
// refused (ErrNotRequeued). Before, they stayed parked with the bulkhead
// empty until their queue timeout (none here: for good) or until an
// arrival happened to come and go.
func TestRequeueEndedLeavesNoneParked(t *testing.T) {
	ctx := context.Background()
	noPay := func() bool { t.Error("pay called"); return false }
	b := newBH(t, 2, 10, 0)
	a, _ := b.Acquire(ctx, P1)
	c, _ := b.Acquire(ctx, P0)
	chA := requeueAsync(b, ctx, "a", P1, a, noPay)
	waitParked(t, b, 1)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Requeue(ended, P0, &c, Sample{}, noPay); !errors.Is(err, context.Canceled) {
		t.Fatalf("c's requeue with its context ended: %v, want context.Canceled", err)
	}
	b.mu.Lock()
	parked := b.parked.n
	b.mu.Unlock()
	if s := b.Stats(); parked != 0 || s.Inflight != 1 {
		t.Fatalf("after the last one in flight left: %d parked, %d in flight; want 0 parked and a granted", parked, s.Inflight)
	}
	r := recv(t, chA)
	if r.err != nil {
		t.Fatalf("a: %v, want a place", r.err)
	}
	r.permit.Release(Sample{})
	if s := b.Stats(); s.Inflight != 0 || s.Queued() != 0 {
		t.Fatalf("in flight %d, queued %d at the end; want 0, 0", s.Inflight, s.Queued())
	}
}
