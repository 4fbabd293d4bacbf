package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// Local is the in-process Store. Keys are spread over shards, each a map
// guarded by its own mutex, so unrelated keys rarely contend. Once a key
// exists, a decision allocates nothing.
//
// Sliding windows are exact: each key keeps a ring buffer of the admitted
// (time, cost) entries of the current window, the same log the Redis store
// keeps in a sorted set, so both stores give the same answers. A ring holds
// at most Limit entries (entries admitted at the same instant are merged), so
// memory per key is O(min(Limit, requests per Window)) × 16 bytes.
//
// Idle keys are evicted lazily: every so many decisions a shard drops keys
// that have been idle for at least the idle TTL and whose state equals a
// fresh key's (window empty, bucket full), so eviction never changes a
// decision.
type Local struct {
	seed   maphash.Seed
	shards []localShard
	mask   uint64
	// idleTTL and sweepEvery are fixed at construction.
	idleTTL    int64 // nanoseconds
	sweepEvery uint32
}

type localShard struct {
	mu   sync.Mutex
	keys map[string]*entry // guarded by mu
	ops  uint32            // guarded by mu; decisions since the last sweep
	_    [40]byte          // keep shards on separate cache lines
}

// LocalOption configures a Local.
type LocalOption func(*Local)

// WithShards sets the number of shards, rounded up to a power of two
// (default 64; values < 1 mean 1).
func WithShards(n int) LocalOption {
	return func(l *Local) {
		s := 1
		for s < n {
			s <<= 1
		}
		l.shards = make([]localShard, s)
	}
}

// WithIdleTTL sets how long a key must be idle before it may be evicted
// (default 1 minute; it is also never evicted while its state differs from a
// fresh key's). d < 0 is treated as 0.
func WithIdleTTL(d time.Duration) LocalOption {
	return func(l *Local) {
		if d < 0 {
			d = 0
		}
		l.idleTTL = int64(d)
	}
}

// WithSweepEvery sets how many decisions a shard makes between idle sweeps
// (default 4096; values < 1 mean 1).
func WithSweepEvery(n int) LocalOption {
	return func(l *Local) {
		if n < 1 {
			n = 1
		}
		l.sweepEvery = uint32(n)
	}
}

// NewLocal returns an empty in-process store.
func NewLocal(opts ...LocalOption) *Local {
	l := &Local{
		seed:       maphash.MakeSeed(),
		idleTTL:    int64(time.Minute),
		sweepEvery: 4096,
	}
	for _, o := range opts {
		o(l)
	}
	if l.shards == nil {
		l.shards = make([]localShard, 64)
	}
	l.mask = uint64(len(l.shards) - 1)
	for i := range l.shards {
		l.shards[i].keys = make(map[string]*entry)
	}
	return l
}

// Allow implements Store. It fails only for an invalid rule, a cost < 1, a
// cost above the rule's capacity (ErrCostExceedsCapacity) or a done ctx.
func (l *Local) Allow(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, fmt.Errorf("ratelimit: local allow %q: %w", key, err)
	}
	if err := checkRequest(rule, cost); err != nil {
		return Decision{}, fmt.Errorf("ratelimit: local allow %q: %w", key, err)
	}
	t := now.UnixNano()
	sh, e := l.lockEntry(key, rule.Algorithm)
	var d Decision
	if rule.Algorithm == TokenBucket {
		d = e.bucket(t, rule, cost)
	} else {
		d = e.sliding(t, rule, cost)
	}
	e.last = t
	e.rule = rule
	sh.ops++
	if sh.ops >= l.sweepEvery {
		sh.ops = 0
		l.sweep(sh, t)
	}
	sh.mu.Unlock()
	return d, nil
}

// lockEntry locks key's shard and returns it with key's entry for algo,
// a new one when the key has none or had another algorithm. The caller
// unlocks sh.mu.
func (l *Local) lockEntry(key string, algo Algorithm) (*localShard, *entry) {
	sh := &l.shards[maphash.String(l.seed, key)&l.mask]
	sh.mu.Lock()
	e := sh.keys[key]
	if e == nil || e.algo != algo {
		e = &entry{algo: algo}
		sh.keys[key] = e
	}
	return sh, e
}

// Len reports how many keys the store holds.
func (l *Local) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.keys)
		sh.mu.Unlock()
	}
	return n
}

// Sweep evicts every idle key whose state equals a fresh key's at now.
func (l *Local) Sweep(now time.Time) {
	t := now.UnixNano()
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		l.sweep(sh, t)
		sh.mu.Unlock()
	}
}

// Close implements io.Closer; Local holds no resources, so it returns nil.
func (l *Local) Close() error { return nil }

// sweep must be called with sh.mu held.
func (l *Local) sweep(sh *localShard, now int64) {
	for k, e := range sh.keys {
		if now-e.last >= l.idleTTL && e.fresh(now) {
			delete(sh.keys, k)
		}
	}
}

func checkRequest(rule Rule, cost int64) error {
	if err := rule.Validate(); err != nil {
		return err
	}
	if cost < 1 {
		return fmt.Errorf("ratelimit: cost %d, want ≥ 1", cost)
	}
	if c := rule.Capacity(); cost > c {
		return fmt.Errorf("%w: cost %d > %d", ErrCostExceedsCapacity, cost, c)
	}
	return nil
}

// entry is one key's state. It is guarded by its shard's mutex.
type entry struct {
	algo Algorithm
	rule Rule  // the rule of the last decision, for eviction
	last int64 // time of the last decision, unix ns

	// Sliding window: admitted entries in time order, oldest at head.
	ring []slot
	head int
	n    int
	sum  int64 // total cost of ring[head:head+n]

	// Token bucket.
	tokens float64
	stamp  int64 // time tokens was last brought up to date; 0: never
}

type slot struct {
	t    int64 // unix ns, non-decreasing along the ring
	cost int64
}

// tokenEpsilon absorbs float rounding so that a retry exactly RetryAfter
// later is admitted.
const tokenEpsilon = 1e-9

// sliding decides under an exact sliding window: an entry admitted at t
// counts while now-t < Window.
func (e *entry) sliding(now int64, r Rule, cost int64) Decision {
	w := int64(r.Window)
	e.expire(now, w)
	d := Decision{Limit: r.Limit}
	if e.sum+cost <= r.Limit {
		e.push(now, cost)
		d.Allowed = true
		d.Remaining = r.Limit - e.sum
		return d
	}
	d.Remaining = r.Limit - e.sum
	if d.Remaining < 0 {
		d.Remaining = 0
	}
	// Free enough of the oldest entries for cost to fit.
	need := e.sum + cost - r.Limit
	var freed int64
	for i := 0; i < e.n; i++ {
		s := e.ring[(e.head+i)%len(e.ring)]
		freed += s.cost
		if freed >= need {
			d.RetryAfter = time.Duration(s.t + w - now)
			break
		}
	}
	if d.RetryAfter <= 0 { // unreachable while cost ≤ Limit; stay safe
		d.RetryAfter = 1
	}
	return d
}

func (e *entry) expire(now, w int64) {
	for e.n > 0 {
		s := &e.ring[e.head]
		if now-s.t < w {
			return
		}
		e.sum -= s.cost
		e.head++
		if e.head == len(e.ring) {
			e.head = 0
		}
		e.n--
	}
}

func (e *entry) push(now, cost int64) {
	if e.n > 0 {
		tail := &e.ring[(e.head+e.n-1)%len(e.ring)]
		if now <= tail.t { // same instant (or a clock step back): merge
			tail.cost += cost
			e.sum += cost
			return
		}
	}
	if e.n == len(e.ring) {
		grown := make([]slot, max(4, 2*len(e.ring)))
		for i := 0; i < e.n; i++ {
			grown[i] = e.ring[(e.head+i)%len(e.ring)]
		}
		e.ring, e.head = grown, 0
	}
	e.ring[(e.head+e.n)%len(e.ring)] = slot{t: now, cost: cost}
	e.n++
	e.sum += cost
}

// refill brings a token bucket (full when new) up to date at now.
func (e *entry) refill(now int64, r Rule) {
	burst := float64(r.Burst)
	if e.stamp == 0 {
		e.tokens, e.stamp = burst, now
	} else if now > e.stamp {
		e.tokens = math.Min(burst, e.tokens+float64(now-e.stamp)*r.ReplenishRate/1e9)
		e.stamp = now
	}
}

// bucket decides under a token bucket that starts full.
func (e *entry) bucket(now int64, r Rule, cost int64) Decision {
	burst := float64(r.Burst)
	e.refill(now, r)
	if e.tokens > burst { // the burst was lowered
		e.tokens = burst
	}
	d := Decision{Limit: r.Burst}
	c := float64(cost)
	if e.tokens+tokenEpsilon >= c {
		e.tokens = math.Max(0, e.tokens-c)
		d.Allowed = true
		d.Remaining = int64(e.tokens + tokenEpsilon)
		return d
	}
	d.Remaining = max(0, int64(e.tokens+tokenEpsilon)) // a settled overuse may leave debt
	d.RetryAfter = time.Duration(math.Ceil((c - e.tokens) / r.ReplenishRate * 1e9))
	if d.RetryAfter <= 0 {
		d.RetryAfter = 1
	}
	return d
}

// Record implements Recorder: it takes cost units from key under rule at
// now whatever is left, for an admission another store decided (the
// shared one) that this instance's share must count. A sliding window may
// go over its limit (the excess expires with the window); a token bucket
// stops at empty. An invalid rule or cost < 1 records nothing.
func (l *Local) Record(key string, rule Rule, cost int64, now time.Time) {
	if rule.Validate() != nil || cost < 1 {
		return
	}
	t := now.UnixNano()
	sh, e := l.lockEntry(key, rule.Algorithm)
	defer sh.mu.Unlock()
	if rule.Algorithm == TokenBucket {
		e.refill(t, rule)
		e.tokens = math.Max(0, math.Min(e.tokens, float64(rule.Burst))-float64(cost))
	} else {
		e.expire(t, int64(rule.Window))
		e.push(t, cost)
	}
	e.last, e.rule = t, rule
}

// fresh reports whether e decides at now exactly as a new key would.
func (e *entry) fresh(now int64) bool {
	if e.algo == TokenBucket {
		if e.stamp == 0 {
			return true
		}
		return e.tokens+float64(now-e.stamp)*e.rule.ReplenishRate/1e9+tokenEpsilon >= float64(e.rule.Burst)
	}
	if e.n == 0 {
		return true
	}
	tail := e.ring[(e.head+e.n-1)%len(e.ring)]
	return now-tail.t >= int64(e.rule.Window)
}
