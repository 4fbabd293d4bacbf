package ratelimit

import (
	"fmt"
	"time"
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

// breaker is the circuit breaker of one shard. Its fields are guarded by
// the Failover's mu.
type breaker struct {
	shard     string // fixed
	state     BreakerState
	failures  int       // consecutive remote failures
	firstFail time.Time // when the current streak of failures began
	nextProbe time.Time // when open: the earliest probe
	lastLocal time.Time // the last fail-open decision made locally; zero: none
	openedAt  time.Time // when it last opened (logged with its closing)
}

// admit returns shard's breaker and reports whether this call may go to
// the primary store, and whether it is the breaker's probe.
func (f *Failover) admit(shard string) (b *breaker, probe, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock()
	b = f.breakers[shard]
	if b == nil {
		b = &breaker{shard: shard}
		if now.Before(f.trippedUntil) {
			b.state, b.nextProbe, b.openedAt = BreakerOpen, f.trippedUntil, now
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

// record updates b with the outcome of a primary call (err nil: it
// answered). While the breaker is not closed only the probe's outcome
// counts: late answers of calls started before it opened do not move it.
func (f *Failover) record(b *breaker, err error, probe bool) {
	f.mu.Lock()
	var opened, closed bool
	var down time.Duration
	now := f.clock()
	switch {
	case probe && err == nil:
		b.state, b.failures = BreakerClosed, 0
		closed, down = true, now.Sub(b.openedAt)
	case probe:
		b.state, b.nextProbe = BreakerOpen, now.Add(f.probeEvery)
	case b.state != BreakerClosed:
	case err == nil:
		b.failures = 0
	default:
		if b.failures == 0 {
			b.firstFail = now
		}
		b.failures++
		if b.failures >= f.threshold && now.Sub(b.firstFail) >= f.span {
			b.state, b.nextProbe, b.openedAt = BreakerOpen, now.Add(f.probeEvery), now
			opened = true
		}
	}
	failures := b.failures
	f.mu.Unlock()
	switch {
	case opened:
		f.log.Warn("rate limit store unavailable: deciding without it until a probe succeeds",
			"store", f.name, "shard", b.shard, "failures", failures, "error", err, "fallback", f.fallbackMode(), "probe_every", f.probeEvery)
	case closed:
		f.log.Info("rate limit store back: decisions are shared again", "store", f.name, "shard", b.shard, "down", down.Round(time.Millisecond))
	}
}

// fallbackMode names what a decision without the shared store does, for
// the log.
func (f *Failover) fallbackMode() string {
	if f.failClosed {
		return "deny (fail closed)"
	}
	return fmt.Sprintf("local share %.3g of each limit (fail open)", f.share)
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
func (f *Failover) Trip() { f.trip(nil) }

// trip is Trip, logging why (err may be nil).
func (f *Failover) trip(err error) {
	f.mu.Lock()
	now := f.clock()
	f.trippedUntil = now.Add(f.probeEvery)
	if f.sharder == nil && f.breakers[""] == nil {
		f.breakers[""] = &breaker{} // opened below: it stays open until a probe succeeds
	}
	for _, b := range f.breakers {
		b.state, b.nextProbe, b.openedAt = BreakerOpen, f.trippedUntil, now
	}
	f.mu.Unlock()
	f.log.Warn("rate limit store unavailable: deciding without it until a probe succeeds",
		"store", f.name, "error", err, "fallback", f.fallbackMode(), "probe_every", f.probeEvery)
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
