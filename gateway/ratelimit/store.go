package ratelimit

import (
	"context"
	"time"
)

// Store decides one request at a time. Allow takes cost units from key under
// rule at time now and reports the Decision. Exactly one call (one round
// trip for a remote store) is made per decision, and Allow returns by ctx's
// deadline. An error means no decision was made (the caller chooses to fail
// open or closed), except ErrCostExceedsCapacity, which is final.
// Implementations are safe for concurrent use.
type Store interface {
	Allow(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error)
}

// StoreFunc adapts a function to Store.
type StoreFunc func(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error)

// Allow calls f.
func (f StoreFunc) Allow(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
	return f(ctx, key, rule, cost, now)
}

// Recorder is an in-process store that can count an admission it did not
// decide. A Failover records every admission the shared store makes in
// its local store when that store is a Recorder (Local is one), so that
// this instance's fallback share counts what it already let through.
type Recorder interface {
	Record(key string, rule Rule, cost int64, now time.Time)
}
