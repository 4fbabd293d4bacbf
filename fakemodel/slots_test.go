package fakemodel

import (
	"context"
	"errors"
	"testing"
)

// TestAbandonedWaiterPassesTheSlotOn: with abandon on, a waiter whose
// client leaves as its slot comes never holds it — acquire returns the
// context's error and the slot goes to the next waiter (or back to the
// pool) — whichever of the two the waiter sees first. Each round cancels
// the client and frees the slot back to back, so both are often ready
// together (before, acquire then returned nil half the time, and the node
// served a request nobody waited for: wasted work with abort_on_disconnect).
func TestAbandonedWaiterPassesTheSlotOn(t *testing.T) {
	for round := range 500 {
		p := newSlotPool(1)
		if err := p.acquire(context.Background(), OverflowQueue, 0, true, nil); err != nil {
			t.Fatalf("round %d: the first acquire: %v", round, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() { got <- p.acquire(ctx, OverflowQueue, 0, true, nil) }()
		for {
			if _, q, _ := p.state(); q == 1 {
				break
			}
		}
		cancel()
		p.release()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: acquire after the client left: %v, want context.Canceled", round, err)
		}
		if s, q, _ := p.state(); s != 0 || q != 0 {
			t.Fatalf("round %d: %d in service, %d queued, want the slot back and no waiter", round, s, q)
		}
	}
}
