package admit

import (
	"context"
	"errors"
	"fmt"
)

// A request that every backend refused (429: all full a moment ago) gives
// its place back and waits for another, parked until a request in flight
// ends (see Bulkhead.Requeue).

// ErrNotRequeued is returned by Bulkhead.Requeue when nothing else was in
// flight to wait for and the caller's pay refused a retry; the place was
// given back.
var ErrNotRequeued = errors.New("admit: not requeued: nothing in flight and no retry to pay with")

// Requeue gives back the place of permit, a request of priority p that
// found no backend to take it (every node answered 429: all were full a
// moment ago), feeding the limiter s like Release, and waits for another
// place for it: first for the next Release — a request that held a
// backend's place ended, so one may have freed — and then like a waiter
// of its priority, ahead of the others of that priority (it was admitted
// before them). Waiting for a Release rather than for room below the
// limit keeps a limit above the backends' places (a static one, or an
// adaptive one before it has a baseline) from sending the request
// straight back to a full backend; giving a place back through Requeue
// wakes no one parked. The queue's size does not bound the requests
// awaiting a Release (they are at most the places given back).
//
// A wait for a Release costs nothing: the backends' own completions pace
// the requests that go again, so they cannot add to an overload. With
// nothing else in flight there is no Release to wait for, and the
// request would go straight back: Requeue calls pay (the caller's retry
// token; nil: granted) and, granted, waits as Acquire does; refused, it
// returns ErrNotRequeued, the place given back, and moves the requests
// parked before (no Release will come for them) to the front of their
// queues. Other errors as Acquire's (ctx ended: the place is given back
// too, and when nothing is left in flight the parked requests move to the
// front of their queues all the same).
func (b *Bulkhead) Requeue(ctx context.Context, p Priority, permit *Permit, s Sample, pay func() bool) (Permit, error) {
	if !p.Valid() {
		return Permit{}, fmt.Errorf("bulkhead %q: invalid priority %d", b.name, uint8(p))
	}
	b.giveBack(permit, s)
	if err := ctx.Err(); err != nil {
		b.wakeParkedIfIdle()
		return Permit{}, err
	}
	b.mu.Lock()
	if b.parkable() {
		w := getWaiter(p)
		b.parkLocked(w)
		return b.wait(ctx, w)
	}
	b.mu.Unlock()
	if pay == nil || pay() {
		pm, err := b.Acquire(ctx, p)
		if err != nil {
			b.wakeParkedIfIdle()
		}
		return pm, err
	}
	b.wakeParked()
	return Permit{}, ErrNotRequeued
}

// wakeParked moves the parked requests to the front of their queues and
// dispatches: a requeue that was refused leaves nothing in flight whose
// Release they could wait for (see Requeue).
func (b *Bulkhead) wakeParked() {
	b.mu.Lock()
	b.unparkLocked()
	b.dispatchLocked()
	b.mu.Unlock()
}

// wakeParkedIfIdle wakes the parked requests (see wakeParked) when
// nothing is in flight: no Release will come for them then.
func (b *Bulkhead) wakeParkedIfIdle() {
	b.mu.Lock()
	if b.inflight == 0 {
		b.unparkLocked()
		b.dispatchLocked()
	}
	b.mu.Unlock()
}

// giveBack releases permit as Release does, but wakes no one parked (see
// Requeue): no backend place freed.
func (b *Bulkhead) giveBack(permit *Permit, s Sample) {
	if permit.b != b {
		permit.Release(s)
		return
	}
	s.Inflight, s.Ticket = permit.inflight, permit.ticket
	lim := permit.lim
	prio := permit.prio
	*permit = Permit{}
	lim.OnSample(s)
	b.mu.Lock()
	b.inflight--
	if prio != P2 {
		b.urgentIn--
	}
	b.dispatchLocked()
	b.mu.Unlock()
}

// parkable reports whether a requeued request waits for a Release (see
// Requeue); mu held.
func (b *Bulkhead) parkable() bool { return b.enabled && b.inflight > 0 }

// parkLocked parks w until the next Release.
func (b *Bulkhead) parkLocked(w *waiter) {
	w.parked = true
	b.parked.pushBack(w)
}

// unparkLocked moves the parked waiters to the front of their queues,
// oldest first; mu held.
func (b *Bulkhead) unparkLocked() {
	for w := b.parked.tail; w != nil; w = b.parked.tail {
		b.parked.remove(w)
		w.parked = false
		b.queues[w.prio].pushFront(w)
		b.queued++
	}
}
