package admit

import (
	"sync"
	"time"
)

// waiter is one request waiting in a Bulkhead queue. Fields other than
// timer and signal are guarded by the bulkhead's mu.
type waiter struct {
	prio       Priority
	prev, next *waiter
	decided    bool          // granted (err == nil) or failed (err != nil)
	parked     bool          // in the bulkhead's parked list, not a queue (see Bulkhead.Requeue)
	err        error         // the decision
	inflight   int           // in flight at grant
	ticket     uint64        // the limiter's ticket at grant
	signal     chan struct{} // receives one value when decided (notify == nil)
	timer      *time.Timer   // stopped while pooled
	// notify, when set, is called (under the bulkhead's mu) instead of
	// signalling: for callers that cannot block, such as the simulation.
	notify func(*waiter)
	id     int // the notify caller's own reference
}

// wake tells the waiter it was decided.
func (w *waiter) wake() {
	if w.notify != nil {
		w.notify(w)
		return
	}
	w.signal <- struct{}{}
}

var waiterPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{signal: make(chan struct{}, 1), timer: t}
}}

func getWaiter(p Priority) *waiter {
	w := waiterPool.Get().(*waiter)
	w.prio = p
	return w
}

func putWaiter(w *waiter) {
	w.prev, w.next, w.decided, w.parked, w.err, w.inflight, w.ticket = nil, nil, false, false, nil, 0, 0
	waiterPool.Put(w)
}

// waitList is an intrusive FIFO of waiters.
type waitList struct {
	head, tail *waiter
	n          int
}

func (l *waitList) pushBack(w *waiter) {
	w.prev, w.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *waitList) pushFront(w *waiter) {
	w.prev, w.next = nil, l.head
	if l.head != nil {
		l.head.prev = w
	} else {
		l.tail = w
	}
	l.head = w
	l.n++
}

func (l *waitList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
	l.n--
}
