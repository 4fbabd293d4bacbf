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
// Safe for concurrent use.
type subcallPool struct {
	mu      sync.Mutex
	cap     int64     // guarded by mu: run slots
	queue   int64     // guarded by mu: places beyond the run slots
	places  int64     // guarded by mu: places held by tasks
	running int64     // guarded by mu: sub-calls holding a run slot
	waiters list.List // guarded by mu: of chan struct{}, front is next
}

func newSubcallPool(cap, queue int) *subcallPool {
	p := &subcallPool{cap: int64(cap), queue: int64(queue)}
	p.waiters.Init()
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
	ready := make(chan struct{})
	e := p.waiters.PushBack(ready)
	p.mu.Unlock()
	select {
	case <-ready:
		return true
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-ready: // granted meanwhile: hand the slot on
			p.running--
			p.wakeLocked()
		default:
			p.waiters.Remove(e)
		}
		return false
	}
}

// done returns a run slot.
func (p *subcallPool) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.wakeLocked()
}

// wakeLocked grants run slots to waiters in order while there is room.
func (p *subcallPool) wakeLocked() {
	for p.running < p.cap && p.waiters.Len() > 0 {
		ch := p.waiters.Remove(p.waiters.Front()).(chan struct{})
		p.running++
		close(ch)
	}
}

// stats reports the sub-calls running and waiting.
func (p *subcallPool) stats() (running, queued int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running, int64(p.waiters.Len())
}

// capacity reports the run slots.
func (p *subcallPool) capacity() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cap
}
