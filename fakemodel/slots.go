package fakemodel

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// errNoSlot is returned by acquire when the overflow policy turns the
// request away (reject, or bounded queue full).
var errNoSlot = errors.New("fakemodel: no free slot")

// errClosed is returned by acquire when the node closes while it waits.
var errClosed = errors.New("fakemodel: node closed")

// slotPool is a counting semaphore with a FIFO of waiters whose limit can
// change at run time. Waiters are served strictly in arrival order, and a
// new arrival never overtakes a waiter.
type slotPool struct {
	mu        sync.Mutex
	limit     int       // guarded by mu; ≥ 1
	inService int       // guarded by mu; may exceed limit right after the limit shrinks
	waiters   list.List // guarded by mu; of *slotWaiter, front is next
}

type slotWaiter struct {
	ready   chan struct{} // closed when granted
	granted bool          // guarded by slotPool.mu
}

func newSlotPool(limit int) *slotPool {
	p := &slotPool{limit: limit}
	p.waiters.Init()
	return p
}

// acquire takes a slot, or applies the overflow policy when none is free:
// reject returns errNoSlot; bounded returns errNoSlot when queueSize
// requests already wait; queue waits without bound. A waiter leaves the
// queue when ctx is done only if abandon is true (ctx.Err() is returned,
// and a slot granted as its client left goes to the next waiter);
// otherwise it keeps its place even after its client left. closed aborts
// every wait (errClosed).
func (p *slotPool) acquire(ctx context.Context, overflow string, queueSize int, abandon bool, closed <-chan struct{}) error {
	p.mu.Lock()
	if p.inService < p.limit && p.waiters.Len() == 0 {
		p.inService++
		p.mu.Unlock()
		return nil
	}
	switch overflow {
	case OverflowReject:
		p.mu.Unlock()
		return errNoSlot
	case OverflowBounded:
		if p.waiters.Len() >= queueSize {
			p.mu.Unlock()
			return errNoSlot
		}
	}
	w := &slotWaiter{ready: make(chan struct{})}
	e := p.waiters.PushBack(w)
	p.mu.Unlock()

	var done <-chan struct{}
	if abandon {
		done = ctx.Done()
	}
	select {
	case <-w.ready:
		if abandon && ctx.Err() != nil {
			// The client left as the slot came (select picks either when
			// both are ready): pass the slot on rather than serve nobody.
			p.release()
			return ctx.Err()
		}
		return nil
	case <-done:
		if p.leave(w, e) {
			p.release() // granted at the same moment: pass it on
		}
		return ctx.Err()
	case <-closed:
		if p.leave(w, e) {
			return nil
		}
		return errClosed
	}
}

// leave removes a waiter that stopped waiting. It reports true when the
// waiter had been granted a slot meanwhile (then it holds the slot).
func (p *slotPool) leave(w *slotWaiter, e *list.Element) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.granted {
		return true
	}
	p.waiters.Remove(e)
	return false
}

// release gives back a slot and hands it to the next waiter, if any.
func (p *slotPool) release() {
	p.mu.Lock()
	p.inService--
	p.grantLocked()
	p.mu.Unlock()
}

// setLimit changes the number of slots. Growing wakes waiters at once;
// shrinking lets requests in service finish.
func (p *slotPool) setLimit(n int) {
	p.mu.Lock()
	p.limit = n
	p.grantLocked()
	p.mu.Unlock()
}

func (p *slotPool) grantLocked() {
	for p.inService < p.limit && p.waiters.Len() > 0 {
		w := p.waiters.Remove(p.waiters.Front()).(*slotWaiter)
		w.granted = true
		close(w.ready)
		p.inService++
	}
}

// state reports requests in service, waiting, and the limit.
func (p *slotPool) state() (inService, queued, limit int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inService, p.waiters.Len(), p.limit
}
