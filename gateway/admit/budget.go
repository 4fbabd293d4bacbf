package admit

import (
	"sync/atomic"
)

// Budget bounds the estimated tokens of requests in flight. Acquire and
// Release never block and never allocate; Budget is safe for concurrent use.
//
// A single request larger than the whole budget is admitted only when
// nothing else is in flight (otherwise it could never run); while it runs,
// every other Acquire fails.
type Budget struct {
	inflight atomic.Int64
	capacity atomic.Int64
}

// NewBudget returns a budget of tokens (values < 0 are treated as 0: only
// lone requests pass, as above).
func NewBudget(tokens int64) *Budget {
	b := &Budget{}
	b.SetCapacity(tokens)
	return b
}

// Acquire takes tokens from the budget and reports whether it could. A
// tokens ≤ 0 always succeeds and takes nothing. Pair every true Acquire
// with one Release of the same amount.
func (b *Budget) Acquire(tokens int64) bool {
	if tokens <= 0 {
		return true
	}
	for {
		cur := b.inflight.Load()
		next := cur + tokens
		if next > b.capacity.Load() && cur != 0 {
			return false
		}
		if b.inflight.CompareAndSwap(cur, next) {
			return true
		}
	}
}

// Release returns tokens taken by Acquire. A tokens ≤ 0 does nothing.
func (b *Budget) Release(tokens int64) {
	if tokens <= 0 {
		return
	}
	if b.inflight.Add(-tokens) < 0 {
		// Releasing more than was acquired is a caller bug; clamp rather
		// than let the budget grow without bound.
		for {
			cur := b.inflight.Load()
			if cur >= 0 || b.inflight.CompareAndSwap(cur, 0) {
				return
			}
		}
	}
}

// Inflight reports the tokens currently held.
func (b *Budget) Inflight() int64 { return b.inflight.Load() }

// Capacity reports the budget.
func (b *Budget) Capacity() int64 { return b.capacity.Load() }

// SetCapacity changes the budget at once. Requests already in flight keep
// their tokens; if they now exceed the budget, new Acquires fail until
// enough are released.
func (b *Budget) SetCapacity(tokens int64) {
	if tokens < 0 {
		tokens = 0
	}
	b.capacity.Store(tokens)
}
