package gateway

import (
	"context"
	"runtime"
	"testing"
)

// TestSubcallPoolRequeue: a requeued sub-call (every node refused it)
// gives its slot back at once — to a sub-call waiting, not to itself —
// and waits for the next sub-call to end, then goes first; one whose
// task's context ends while it waits leaves nothing behind; alone it
// asks pay, and a refusal leaves it holding nothing.
func TestSubcallPoolRequeue(t *testing.T) {
	p := newSubcallPool(2, 4)
	bg := context.Background()
	p.acquire(bg, true) // a
	p.acquire(bg, true) // b
	waiter := make(chan bool)
	go func() { waiter <- p.acquire(bg, true) }() // c, queued behind the cap
	for _, q := p.stats(); q != 1; _, q = p.stats() {
		runtime.Gosched()
	}
	requeued := make(chan bool)
	go func() {
		requeued <- p.requeue(bg, true, func() bool { t.Error("pay asked with another running"); return false })
	}() // b refused
	if !<-waiter {
		t.Fatal("the slot b gave back did not go to the sub-call waiting")
	}
	if r, q := p.stats(); r != 2 || q != 1 {
		t.Fatalf("running %d, waiting %d; want 2 and b parked", r, q)
	}
	p.done() // a ends: b goes again, first
	if !<-requeued {
		t.Fatal("b did not get a slot when a ended")
	}
	// A sub-call whose task ends while it waits leaves nothing behind.
	ctx, cancel := context.WithCancel(bg)
	go func() { requeued <- p.requeue(ctx, true, nil) }() // c refused, b runs
	for _, q := p.stats(); q != 1; _, q = p.stats() {
		runtime.Gosched()
	}
	cancel()
	if <-requeued {
		t.Fatal("a requeue whose context ended reported a slot")
	}
	if r, q := p.stats(); r != 1 || q != 0 {
		t.Fatalf("running %d, waiting %d after the cancel; want b alone", r, q)
	}
	// Alone, it asks pay: refused, it holds nothing.
	if p.requeue(bg, true, func() bool { return false }) {
		t.Fatal("a requeue whose pay refused reported a slot")
	}
	if r, q := p.stats(); r != 0 || q != 0 {
		t.Fatalf("running %d, waiting %d; want nothing", r, q)
	}
}
