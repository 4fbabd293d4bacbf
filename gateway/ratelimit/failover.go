package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Failover defaults.
const (
	// DefaultFailoverTimeout bounds one remote decision. EVALSHA on
	// loopback answers in ~0.2 ms at p99, so 5 ms only trips when Redis is
	// really slow or gone.
	DefaultFailoverTimeout = 5 * time.Millisecond
	// DefaultBreakerFailures consecutive failures open the breaker…
	DefaultBreakerFailures = 3
	// DefaultBreakerSpan … once the streak of failures has lasted this
	// long. A stall of the gateway process itself (GC, a busy machine)
	// times out every call in flight at the same instant; such a burst is
	// not an outage, and opening the breaker on it would hand every
	// decision to the local shares for a probe interval.
	DefaultBreakerSpan = 50 * time.Millisecond
	// DefaultBreakerProbe is how long the breaker stays open before one
	// call probes the remote store again.
	DefaultBreakerProbe = 500 * time.Millisecond
	// ProbeTimeout is the least time a probe of the remote store gets.
	ProbeTimeout = 100 * time.Millisecond
)

// BreakerState is the state of a Failover's circuit breaker.
type BreakerState int32

// Breaker states. The numbers match the gauge convention of
// levee_upstream_breaker_state.
const (
	// BreakerClosed: every decision goes to the remote store.
	BreakerClosed BreakerState = 0
	// BreakerHalfOpen: one probe is in flight; other decisions are local.
	BreakerHalfOpen BreakerState = 1
	// BreakerOpen: every decision is local until the next probe is due.
	BreakerOpen BreakerState = 2
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerHalfOpen:
		return "half-open"
	case BreakerOpen:
		return "open"
	}
	return fmt.Sprintf("BreakerState(%d)", int32(s))
}

// Sharder is implemented by a shared store whose keys live in independent
// failure domains — the hash slots of a Redis Cluster, each served by one
// master. Shard names the domain of key; a Failover keeps one breaker per
// shard, so one lost master sends only its own limits to the local
// fallback. A store with one failure domain returns "" for every key.
type Sharder interface {
	Shard(key string) string
}

// Failover is a Store that asks a shared (remote) store first and decides
// alone when it cannot:
//
//   - Each remote call gets its own deadline (FailoverTimeout, default 5 ms).
//   - On an error or timeout the decision falls back. Fail-open (the
//     default) asks the in-process store with this instance's share of the
//     limit, rule.Scaled(share), so N gateways with share 1/N together still
//     admit about one limit. Fail-closed denies with RetryAfter set to the
//     time until the remote store is tried again. Either way Allow returns no
//     error, and the fallback is counted (Fallbacks and the metric
//     levee_ratelimit_store_fallback_total{store="<name>"}).
//   - A circuit breaker opens after FailoverBreaker's consecutive failures
//     spanning at least FailoverBreakerSpan (default 3 over 50 ms), so while the remote store is down decisions stop paying the timeout:
//     they fall back at once. Every probe interval one call probes the remote
//     store; its success closes the breaker and decisions are global again.
//     When the primary store is a Sharder there is one breaker per shard.
//
// Errors that are the caller's own — an invalid rule, a cost < 1,
// ErrCostExceedsCapacity — are returned as they are, never hidden by a
// fallback. When the caller's own context is done Allow returns its error.
// Every other call ends as exactly one of a remote decision
// (RemoteDecisions) or a fallback (Fallbacks).
type Failover struct {
	primary    Store
	sharder    Sharder // primary as a Sharder; nil when it is not one
	local      Store
	name       string        // store label of the metric
	timeout    time.Duration // > 0
	share      float64       // in (0, 1]
	failClosed bool
	threshold  int           // ≥ 1
	span       time.Duration // ≥ 0
	probeEvery time.Duration // > 0

	mu           sync.Mutex
	breakers     map[string]*breaker // by shard; guarded by mu
	trippedUntil time.Time           // breakers made before this start open (Trip); guarded by mu

	fallbacks atomic.Uint64
	remote    atomic.Uint64 // decisions the remote store made
	metric    prometheus.Counter
	clock     func() time.Time
}

// breaker is the circuit breaker of one shard. Its fields are guarded by
// the Failover's mu.
type breaker struct {
	state     BreakerState
	failures  int       // consecutive remote failures
	firstFail time.Time // when the current streak of failures began
	nextProbe time.Time // when open: the earliest probe
}

// FailoverOption configures a Failover.
type FailoverOption func(*Failover)

// FailoverTimeout sets the deadline of one remote decision (default
// DefaultFailoverTimeout). It must be > 0.
func FailoverTimeout(d time.Duration) FailoverOption { return func(f *Failover) { f.timeout = d } }

// FailoverShare sets this instance's share of every limit while deciding
// alone (default 1): 1/N for N gateways. It must be in (0, 1].
func FailoverShare(share float64) FailoverOption { return func(f *Failover) { f.share = share } }

// FailoverFailClosed makes fallback decisions deny (true) instead of deciding
// locally (false, the default).
func FailoverFailClosed(closed bool) FailoverOption {
	return func(f *Failover) { f.failClosed = closed }
}

// FailoverBreaker sets how many consecutive remote failures open the breaker
// (≥ 1, default DefaultBreakerFailures) and how long it stays open before a
// probe (> 0, default DefaultBreakerProbe).
func FailoverBreaker(failures int, probeEvery time.Duration) FailoverOption {
	return func(f *Failover) { f.threshold, f.probeEvery = failures, probeEvery }
}

// FailoverBreakerSpan sets how long a streak of failures must last before
// it opens the breaker (≥ 0, default DefaultBreakerSpan; 0: the count alone
// decides).
func FailoverBreakerSpan(d time.Duration) FailoverOption { return func(f *Failover) { f.span = d } }

// FailoverLocal sets the store used while deciding alone (default a new
// NewLocal()). It should be in-process: it is called without a timeout.
func FailoverLocal(s Store) FailoverOption { return func(f *Failover) { f.local = s } }

// FailoverName sets the store label of the fallback metric (default "redis").
func FailoverName(name string) FailoverOption { return func(f *Failover) { f.name = name } }

// failoverClock replaces time.Now for the breaker (tests).
func failoverClock(now func() time.Time) FailoverOption { return func(f *Failover) { f.clock = now } }

// NewFailover wraps primary, a shared store, with a timeout, a local
// fallback and a breaker. It returns an error naming the first bad option.
func NewFailover(primary Store, opts ...FailoverOption) (*Failover, error) {
	if primary == nil {
		return nil, errors.New("ratelimit: failover: primary store is nil")
	}
	f := &Failover{
		primary:    primary,
		name:       wire.StoreRedis,
		timeout:    DefaultFailoverTimeout,
		share:      1,
		threshold:  DefaultBreakerFailures,
		span:       DefaultBreakerSpan,
		probeEvery: DefaultBreakerProbe,
		clock:      time.Now,
	}
	for _, o := range opts {
		o(f)
	}
	switch {
	case f.timeout <= 0:
		return nil, fmt.Errorf("ratelimit: failover timeout %v, want > 0", f.timeout)
	case math.IsNaN(f.share) || f.share <= 0 || f.share > 1:
		return nil, fmt.Errorf("ratelimit: failover share %v, want a value in (0, 1]", f.share)
	case f.threshold < 1:
		return nil, fmt.Errorf("ratelimit: failover breaker failures %d, want ≥ 1", f.threshold)
	case f.span < 0:
		return nil, fmt.Errorf("ratelimit: failover breaker span %v, want ≥ 0", f.span)
	case f.probeEvery <= 0:
		return nil, fmt.Errorf("ratelimit: failover breaker probe interval %v, want > 0", f.probeEvery)
	case f.name == "":
		return nil, errors.New("ratelimit: failover store name is empty")
	}
	if f.local == nil {
		f.local = NewLocal()
	}
	f.sharder, _ = primary.(Sharder)
	f.breakers = map[string]*breaker{}
	f.metric = prometheus.NewCounter(prometheus.CounterOpts{
		Name:        wire.MetricRateLimitStoreFallback,
		Help:        "Rate limit decisions made without the shared store (local share or fail-closed denial) because it failed, timed out or its breaker was open.",
		ConstLabels: prometheus.Labels{wire.LabelStore: f.name},
	})
	return f, nil
}

// Allow implements Store. See Failover for when it decides locally.
func (f *Failover) Allow(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
	if err := checkRequest(rule, cost); err != nil {
		return Decision{}, fmt.Errorf("ratelimit: allow %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, fmt.Errorf("ratelimit: allow %q: %w", key, err)
	}
	shard := ""
	if f.sharder != nil {
		shard = f.sharder.Shard(key)
	}
	b, probe, ok := f.admit(shard)
	if !ok {
		return f.fallback(ctx, b, key, rule, cost, now)
	}
	timeout := f.timeout
	if probe {
		// A probe after an outage dials afresh and reloads the script
		// (NOSCRIPT, then EVAL): several round trips that a 5 ms budget
		// misses on a busy machine, again and again, keeping the breaker
		// open long after Redis is back. One caller per probe interval
		// may wait longer; every other decision meanwhile stays local.
		timeout = max(timeout, ProbeTimeout)
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	d, err := f.primary.Allow(callCtx, key, rule, cost, now)
	cancel()
	if err == nil {
		f.record(b, true, probe)
		f.remote.Add(1)
		return d, nil
	}
	if errors.Is(err, ErrCostExceedsCapacity) {
		f.record(b, true, probe) // the store answered
		return d, err
	}
	if ctx.Err() != nil {
		// The caller gave up; that says nothing about the store, but a
		// probe slot must be given back.
		f.release(b, probe)
		return Decision{}, fmt.Errorf("ratelimit: allow %q: %w", key, ctx.Err())
	}
	f.record(b, false, probe)
	return f.fallback(ctx, b, key, rule, cost, now)
}

// fallback decides without the primary store and counts it.
func (f *Failover) fallback(ctx context.Context, b *breaker, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
	f.fallbacks.Add(1)
	f.metric.Inc()
	if f.failClosed {
		return Decision{Allowed: false, Remaining: 0, Limit: rule.Capacity(), RetryAfter: f.retryAfter(b)}, nil
	}
	return f.local.Allow(ctx, key, rule.Scaled(f.share), cost, now)
}

// retryAfter is the wait a fail-closed denial announces: until b's next
// probe (at least 1 ms, at most one probe interval).
func (f *Failover) retryAfter(b *breaker) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.probeEvery
	if b.state == BreakerOpen {
		if until := b.nextProbe.Sub(f.clock()); until > 0 && until < d {
			d = until
		}
	}
	return max(d, time.Millisecond)
}

// admit returns shard's breaker and reports whether this call may go to
// the primary store, and whether it is the breaker's probe.
func (f *Failover) admit(shard string) (b *breaker, probe, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock()
	b = f.breakers[shard]
	if b == nil {
		b = &breaker{}
		if now.Before(f.trippedUntil) {
			b.state, b.nextProbe = BreakerOpen, f.trippedUntil
		}
		f.breakers[shard] = b
	}
	switch b.state {
	case BreakerClosed:
		return b, false, true
	case BreakerOpen:
		if !now.Before(b.nextProbe) {
			b.state = BreakerHalfOpen
			return b, true, true
		}
	}
	return b, false, false // open, or half-open with the probe in flight
}

// record updates b with the outcome of a primary call. While the breaker is
// not closed only the probe's outcome counts: late answers of calls started
// before it opened do not move it.
func (f *Failover) record(b *breaker, success, probe bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case probe && success:
		b.state, b.failures = BreakerClosed, 0
	case probe:
		b.state, b.nextProbe = BreakerOpen, f.clock().Add(f.probeEvery)
	case b.state != BreakerClosed:
	case success:
		b.failures = 0
	default:
		now := f.clock()
		if b.failures == 0 {
			b.firstFail = now
		}
		b.failures++
		if b.failures >= f.threshold && now.Sub(b.firstFail) >= f.span {
			b.state, b.nextProbe = BreakerOpen, now.Add(f.probeEvery)
		}
	}
}

// release gives back a probe slot whose call ended without a verdict.
func (f *Failover) release(b *breaker, probe bool) {
	if !probe {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b.state == BreakerHalfOpen {
		b.state = BreakerOpen // nextProbe is in the past: the next call probes
	}
}

// Trip opens every breaker now, as if the threshold of failures had just
// been reached: decisions fall back at once and the first probe of each
// shard goes out one probe interval later (shards first seen before then
// start open too). Use it when the store is known to be down (a failed
// warm-up at start) so that no caller pays the timeout to find out.
func (f *Failover) Trip() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trippedUntil = f.clock().Add(f.probeEvery)
	if f.sharder == nil && f.breakers[""] == nil {
		f.breakers[""] = &breaker{} // opened below: it stays open until a probe succeeds
	}
	for _, b := range f.breakers {
		b.state, b.nextProbe = BreakerOpen, f.trippedUntil
	}
}

// State reports the state of the worst breaker: BreakerClosed means every
// shard's decisions are global (made by the shared store), BreakerOpen that
// some shard decides locally.
func (f *Failover) State() BreakerState {
	f.mu.Lock()
	defer f.mu.Unlock()
	worst := BreakerClosed
	if f.clock().Before(f.trippedUntil) {
		worst = BreakerOpen
	}
	for _, b := range f.breakers {
		worst = max(worst, b.state)
	}
	return worst
}

// Fallbacks is the number of decisions made without the shared store.
func (f *Failover) Fallbacks() uint64 { return f.fallbacks.Load() }

// RemoteDecisions is the number of decisions the shared store made.
func (f *Failover) RemoteDecisions() uint64 { return f.remote.Load() }

// Collectors returns the metrics to register: the counter
// levee_ratelimit_store_fallback_total{store}. Register them once per
// Failover (two Failovers with the same name cannot share a registry).
func (f *Failover) Collectors() []prometheus.Collector {
	return []prometheus.Collector{f.metric}
}
