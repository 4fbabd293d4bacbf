package gateway

import (
	"container/list"
	"context"
	"sync"
)

// subcallPool bounds agent sub-calls (seed 004: cap the amplification; no
// unbounded queue anywhere). A task takes places at its entry, one per
// parallel sub-call of its steps; there are cap + queue places, so a
// task that finds none is refused at the entry, never buffered. Each
// sub-call then waits, first come first served, for one of cap run slots;
// at most queue sub-calls can be waiting, by construction. Unbounded
// (the budget defense off), places are unlimited and nothing waits.
// A sub-call that every node refused (429) gives its slot back and waits
// for another (see requeue), within the same places. Safe for concurrent
// use.
type subcallPool struct {
	mu      sync.Mutex
	cap     int64     // guarded by mu: run slots
	queue   int64     // guarded by mu: places beyond the run slots
	places  int64     // guarded by mu: places held by tasks
	running int64     // guarded by mu: sub-calls holding a run slot
	waiters list.List // guarded by mu: of *subWaiter, front is next
	parked  list.List // guarded by mu: of *subWaiter, requeued ones awaiting the next done
}

// subWaiter is a sub-call waiting for a run slot, in waiters or parked.
type subWaiter struct {
	ready  chan struct{} // closed when granted a slot
	e      *list.Element
	parked bool
}

func newSubcallPool(cap, queue int) *subcallPool {
	p := &subcallPool{cap: int64(cap), queue: int64(queue)}
	p.waiters.Init()
	p.parked.Init()
	return p
}

// setCap changes the run slots and wakes waiters that now fit.
func (p *subcallPool) setCap(cap int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cap = cap
	p.wakeLocked()
}

// reserve takes up to want places for a task and returns how many it got
// (0: refuse the task). Unbounded, it gets want.
func (p *subcallPool) reserve(want int, bounded bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := int64(want)
	if bounded {
		n = min(n, p.cap+p.queue-p.places)
	}
	if n <= 0 {
		return 0
	}
	p.places += n
	return int(n)
}

// unreserve gives back n places.
func (p *subcallPool) unreserve(n int) {
	p.mu.Lock()
	p.places = max(p.places-int64(n), 0)
	p.mu.Unlock()
}

// acquire takes a run slot for one sub-call of a task holding places,
// waiting in arrival order while cap sub-calls run; it reports false when
// ctx (the task's: its deadline is all that bounds the wait, see
// AgentConfig.QueueSize) ended first. Unbounded, it never waits.
func (p *subcallPool) acquire(ctx context.Context, bounded bool) bool {
	p.mu.Lock()
	if !bounded || (p.running < p.cap && p.waiters.Len() == 0) {
		p.running++
		p.mu.Unlock()
		return true
	}
	w := &subWaiter{ready: make(chan struct{})}
	w.e = p.waiters.PushBack(w)
	p.mu.Unlock()
	return p.await(ctx, w)
}

// await waits for w's slot; false (w gone from its list, or the slot it
// was granted meanwhile handed on) when ctx ended first.
func (p *subcallPool) await(ctx context.Context, w *subWaiter) bool {
	select {
	case <-w.ready:
		return true
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: hand the slot on
			p.freeLocked(false)
		default:
			if w.parked {
				p.parked.Remove(w.e)
			} else {
				p.waiters.Remove(w.e)
			}
		}
		return false
	}
}

// requeue gives back the run slot of a sub-call that no node took (every
// node answered 429: all were full a moment ago) and waits for another,
// as admit.Bulkhead.Requeue does for an ordinary call: bounded and with
// other sub-calls running, it waits for the next of them to end (done: it
// held a node's place, so one may have freed), then for a slot ahead of
// the sub-calls waiting (it ran before them). That wait costs nothing:
// the sub-calls' own completions pace it. With none running (or
// unbounded: nothing waits) there is no end to wait for and it would go
// straight back: pay is asked (a retry token) and, granted, it takes a
// slot as acquire does. It reports whether the sub-call holds a slot
// again: false when pay refused or ctx (the task's) ended first. It
// takes no place: the task's places bound it as before.
func (p *subcallPool) requeue(ctx context.Context, bounded bool, pay func() bool) bool {
	p.mu.Lock()
	if !bounded || p.running == 1 { // it alone runs
		p.freeLocked(false)
		p.mu.Unlock()
		if !pay() {
			return false
		}
		return p.acquire(ctx, bounded)
	}
	p.running--
	w := &subWaiter{ready: make(chan struct{}), parked: true}
	w.e = p.parked.PushBack(w)
	p.wakeLocked() // the slot given back goes to a waiter, not to w
	p.mu.Unlock()
	return p.await(ctx, w)
}

// done returns a run slot: a sub-call ended.
func (p *subcallPool) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.freeLocked(true)
}

// freeLocked returns a run slot and grants the freed slots to waiters.
// The parked sub-calls go to the front of the queue when a sub-call
// ended, or when none runs any more (no end will come for them); mu held.
func (p *subcallPool) freeLocked(ended bool) {
	p.running--
	if ended || p.running == 0 {
		for e := p.parked.Back(); e != nil; e = p.parked.Back() {
			w := p.parked.Remove(e).(*subWaiter)
			w.parked = false
			w.e = p.waiters.PushFront(w)
		}
	}
	p.wakeLocked()
}

// wakeLocked grants run slots to waiters in order while there is room.
func (p *subcallPool) wakeLocked() {
	for p.running < p.cap && p.waiters.Len() > 0 {
		w := p.waiters.Remove(p.waiters.Front()).(*subWaiter)
		p.running++
		close(w.ready)
	}
}

// stats reports the sub-calls running and waiting (requeued ones
// awaiting a done included).
func (p *subcallPool) stats() (running, queued int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running, int64(p.waiters.Len() + p.parked.Len())
}

// capacity reports the run slots.
func (p *subcallPool) capacity() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cap
}
