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
//
// Errors that are the caller's own — an invalid rule, a cost < 1,
// ErrCostExceedsCapacity — are returned as they are, never hidden by a
// fallback. When the caller's own context is done Allow returns its error.
type Failover struct {
	primary    Store
	local      Store
	name       string        // store label of the metric
	timeout    time.Duration // > 0
	share      float64       // in (0, 1]
	failClosed bool
	threshold  int           // ≥ 1
	span       time.Duration // ≥ 0
	probeEvery time.Duration // > 0

	mu        sync.Mutex
	state     BreakerState // guarded by mu
	failures  int          // consecutive remote failures; guarded by mu
	firstFail time.Time    // when the current streak of failures began; guarded by mu
	nextProbe time.Time    // when open: the earliest probe; guarded by mu

	fallbacks atomic.Uint64
	remote    atomic.Uint64 // decisions the remote store made
	metric    prometheus.Counter
	clock     func() time.Time
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
	probe, ok := f.admit()
	if !ok {
		return f.fallback(ctx, key, rule, cost, now)
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
		f.record(true, probe)
		f.remote.Add(1)
		return d, nil
	}
	if errors.Is(err, ErrCostExceedsCapacity) {
		f.record(true, probe) // the store answered
		return d, err
	}
	if ctx.Err() != nil {
		// The caller gave up; that says nothing about the store, but a
		// probe slot must be given back.
		f.release(probe)
		return Decision{}, fmt.Errorf("ratelimit: allow %q: %w", key, ctx.Err())
	}
	f.record(false, probe)
	return f.fallback(ctx, key, rule, cost, now)
}

// fallback decides without the primary store and counts it.
func (f *Failover) fallback(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
	f.fallbacks.Add(1)
	f.metric.Inc()
	if f.failClosed {
		return Decision{Allowed: false, Remaining: 0, Limit: rule.Capacity(), RetryAfter: f.retryAfter()}, nil
	}
	return f.local.Allow(ctx, key, rule.Scaled(f.share), cost, now)
}

// retryAfter is the wait a fail-closed denial announces: until the next probe
// (at least 1 ms, at most one probe interval).
func (f *Failover) retryAfter() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.probeEvery
	if f.state == BreakerOpen {
		if until := f.nextProbe.Sub(f.clock()); until > 0 && until < d {
			d = until
		}
	}
	return max(d, time.Millisecond)
}

// admit reports whether this call may go to the primary store, and whether
// it is the breaker's probe.
func (f *Failover) admit() (probe, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.state {
	case BreakerClosed:
		return false, true
	case BreakerOpen:
		if !f.clock().Before(f.nextProbe) {
			f.state = BreakerHalfOpen
			return true, true
		}
	}
	return false, false // open, or half-open with the probe in flight
}

// record updates the breaker with the outcome of a primary call. While the
// breaker is not closed only the probe's outcome counts: late answers of
// calls started before it opened do not move it.
func (f *Failover) record(success, probe bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case probe && success:
		f.state, f.failures = BreakerClosed, 0
	case probe:
		f.state, f.nextProbe = BreakerOpen, f.clock().Add(f.probeEvery)
	case f.state != BreakerClosed:
	case success:
		f.failures = 0
	default:
		now := f.clock()
		if f.failures == 0 {
			f.firstFail = now
		}
		f.failures++
		if f.failures >= f.threshold && now.Sub(f.firstFail) >= f.span {
			f.state, f.nextProbe = BreakerOpen, now.Add(f.probeEvery)
		}
	}
}

// release gives back a probe slot whose call ended without a verdict.
func (f *Failover) release(probe bool) {
	if !probe {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == BreakerHalfOpen {
		f.state = BreakerOpen // nextProbe is in the past: the next call probes
	}
}

// Trip opens the breaker now, as if the threshold of failures had just
// been reached: decisions fall back at once and the first probe goes out
// one probe interval later. Use it when the store is known to be down (a
// failed warm-up at start) so that no caller pays the timeout to find out.
func (f *Failover) Trip() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state, f.nextProbe = BreakerOpen, f.clock().Add(f.probeEvery)
}

// State reports the breaker's state: BreakerClosed means decisions are
// global (made by the shared store).
func (f *Failover) State() BreakerState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
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
