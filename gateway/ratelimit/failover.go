package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
//     limit, rule.ShareFor(share, cost), so N gateways with share 1/N
//     together still admit about one limit (a request above the share but
//     within the rule needs the whole share: it is never refused as
//     ErrCostExceedsCapacity while the rule could admit it). Fail-closed denies with RetryAfter set to the
//     time until the remote store is tried again (and Unavailable set, so
//     that the caller can say why). Either way Allow returns no
//     error, and the fallback is counted (Fallbacks and the metric
//     levee_ratelimit_store_fallback_total{store="<name>"}).
//   - A circuit breaker opens after FailoverBreaker's consecutive failures
//     spanning at least FailoverBreakerSpan (default 3 over 50 ms), so while the remote store is down decisions stop paying the timeout:
//     they fall back at once. Every probe interval one call probes the remote
//     store; its success closes the breaker and decisions are global again.
//     When the primary store is a Sharder there is one breaker per shard.
//   - The fallback share is bounded: when the local store is a Recorder
//     (NewLocal's is), every admission the shared store makes is recorded
//     in it too, so a fallback decision counts what this instance already
//     let through in the limit's span; and for one span after a shard's
//     last fallback decision, an admission needs room in the local share
//     as well as in the shared store (the shared store never saw the
//     local admissions). In any span in which it decides a key locally,
//     one instance admits at most max(share × limit, what the shared
//     store let it through before): when the store flaps for every
//     instance alike, they no longer add share × limit each on top of the
//     shared limit (up to 2× it over N instances). An instance that falls
//     back alone can still add what its share had left. Denials by the local share in that span are
//     fallbacks too (decisions made without the shared store).
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
	recorder   Recorder      // local as a Recorder; nil: the fallback share is not bounded by remote admissions
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
	log       *slog.Logger // never nil; a breaker's opening and closing, once each
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

// FailoverLogger sets the logger that hears each breaker opening (a warning
// naming the store, the shard and the error) and closing again (default:
// discard). It logs transitions only, never a decision.
func FailoverLogger(l *slog.Logger) FailoverOption { return func(f *Failover) { f.log = l } }

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
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
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
	if !f.failClosed {
		f.recorder, _ = f.local.(Recorder)
	}
	f.sharder, _ = primary.(Sharder)
	f.breakers = map[string]*breaker{}
	f.metric = prometheus.NewCounter(prometheus.CounterOpts{
		Name:        wire.MetricRateLimitStoreFallback,
		Help:        "Rate limit decisions made without the shared store (local share or fail-closed denial) because it failed, timed out or its breaker was open, or by the local share within one limit span after that.",
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
	// Within a span of a local decision the local share must have room
	// too (see Failover); the probe alone goes straight to the store, so
	// the breaker always learns whether it is back.
	var local *Decision
	if !probe && f.gated(b, rule) {
		d, err := f.local.Allow(ctx, key, rule.ShareFor(f.share, cost), cost, now)
		if err != nil {
			f.countFallback()
			return d, err
		}
		if !d.Allowed {
			// Counted, but not a new local decision: the gate ends one
			// span after the store last failed, however long the tenant
			// stays over its share.
			f.countFallback()
			return d, nil
		}
		local = &d
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
		f.record(b, nil, probe)
		f.remote.Add(1)
		if d.Allowed && local == nil && f.recorder != nil {
			f.recorder.Record(key, rule.ShareFor(f.share, cost), cost, now)
		}
		return d, nil
	}
	if errors.Is(err, ErrCostExceedsCapacity) {
		f.record(b, nil, probe) // the store answered
		return d, err
	}
	if ctx.Err() != nil {
		// The caller gave up; that says nothing about the store, but a
		// probe slot must be given back.
		f.release(b, probe)
		return Decision{}, fmt.Errorf("ratelimit: allow %q: %w", key, ctx.Err())
	}
	f.record(b, err, probe)
	if local != nil {
		// The local share has already decided (and counted) this one.
		f.countFallback()
		f.markLocal(b)
		return *local, nil
	}
	return f.fallback(ctx, b, key, rule, cost, now)
}

// countFallback counts one decision made without the primary store.
func (f *Failover) countFallback() {
	f.fallbacks.Add(1)
	f.metric.Inc()
}

// markLocal notes that shard b just decided locally (fail-open).
func (f *Failover) markLocal(b *breaker) {
	f.mu.Lock()
	b.lastLocal = f.clock()
	f.mu.Unlock()
}

// gated reports whether b decided locally within one span of rule: then a
// remote admission needs room in the local share too. Only with a
// Recorder (fail-open), whose local share counts remote admissions.
func (f *Failover) gated(b *breaker, rule Rule) bool {
	if f.recorder == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return !b.lastLocal.IsZero() && f.clock().Sub(b.lastLocal) < ruleSpan(rule)
}

// ruleSpan is how long an admission weighs on rule: a sliding window's
// window, the time a token bucket takes to refill from empty.
func ruleSpan(r Rule) time.Duration {
	if r.Algorithm == TokenBucket && r.ReplenishRate > 0 {
		return time.Duration(math.Ceil(float64(r.Burst) / r.ReplenishRate * float64(time.Second)))
	}
	return r.Window
}

// fallback decides without the primary store and counts it.
func (f *Failover) fallback(ctx context.Context, b *breaker, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
	f.countFallback()
	if f.failClosed {
		return Decision{Allowed: false, Remaining: 0, Limit: rule.Capacity(), RetryAfter: f.retryAfter(b), Unavailable: true}, nil
	}
	f.markLocal(b)
	return f.local.Allow(ctx, key, rule.ShareFor(f.share, cost), cost, now)
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
