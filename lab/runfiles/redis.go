package runfiles

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/levee-lab/levee/lab/experiment"
)

// RedisSummary says which Redis the gateways shared their rate limits
// through and what it went through.
type RedisSummary struct {
	// Kind is off, server (redis-server), embedded (`levee redis`),
	// cluster (a Redis Cluster of redis-servers) or external (a URL the
	// lab does not run).
	Kind string `json:"kind"`
	// Addr is host:port: the server, a cluster's first node, an external
	// Redis's host; empty when off.
	Addr string `json:"addr,omitempty"`
	// Fallbacks is the rate-limit decisions the gateways made without Redis
	// (their local share, or a fail-closed denial) during the recording:
	// the increase of levee_ratelimit_store_fallback_total, summed over the
	// gateways (a gateway's restart loses its count since its last scrape).
	Fallbacks float64 `json:"fallbacks"`
	// Failovers has one entry per cluster master killed, in time order.
	Failovers []RedisFailover `json:"failovers,omitempty"`
}

// RedisFailover is one cluster master lost and, with replicas, replaced.
type RedisFailover struct {
	Killed string  `json:"killed"` // the master's address
	AtS    float64 `json:"at_s"`   // when it was killed (seconds since the start)
	// By is the replica that took its slots over, "" when none did.
	By string `json:"by,omitempty"`
	// AfterS is the time from the kill until its slots were served again.
	AfterS float64 `json:"after_s,omitempty"`
	// Error says why no failover was seen.
	Error string `json:"error,omitempty"`
}

// String is one line for people: "127.0.0.1:7000 → 127.0.0.1:7004 in 2.1 s".
func (f RedisFailover) String() string {
	if f.By == "" {
		return fmt.Sprintf("%s lost at %.1fs, no failover (%s)", f.Killed, f.AtS, f.Error)
	}
	return fmt.Sprintf("%s → %s in %.1fs (at %.1fs)", f.Killed, f.By, f.AfterS, f.AtS)
}

// RateLimitSummary measures the global rate limit: for each priority whose
// tenant one rule covers (experiment.GlobalLimits), what all the gateways
// together let through over the spans where the tenant offered at least
// its limit (overLimit × it in runs without a reference), against what
// one exact limiter with the same rule
// let through of the same requests (the generator's reference,
// load.Config.Reference), or against the limit in runs recorded without
// one. An exact limiter falls short of its limit under random arrivals (a
// sliding window admits about 98 % of it at 1.5× the limit in Poisson
// arrivals, 99.5 % at 3×: a freed place waits for the next arrival), so
// the limit alone would read that shortfall as the gateways' error. Spans that overlap a fault
// (from its start to one span after its end, when a restarted store is
// still refilling) are judged apart from the others.
type RateLimitSummary struct {
	ByPriority map[string]GlobalLimitCheck `json:"by_priority"`
}

// GlobalLimitCheck is one priority's global limit, measured.
type GlobalLimitCheck struct {
	LimitRPS float64 `json:"limit_rps"`
	Rule     string  `json:"rule"`
	// Steady is outside faults, Faults during them.
	Steady LimitSpan `json:"steady"`
	Faults LimitSpan `json:"faults"`
}

// LimitSpan is the admissions over the spans measured.
type LimitSpan struct {
	Seconds     float64 `json:"seconds"`      // time measured (offered over the limit)
	AdmittedRPS float64 `json:"admitted_rps"` // let through by the rate limit, per second
	// ReferenceRPS is what one exact limiter let through of the same
	// requests, per second; absent when the run has no reference.
	ReferenceRPS float64 `json:"reference_rps,omitempty"`
	// Error is AdmittedRPS / ReferenceRPS − 1 (AdmittedRPS / LimitRPS − 1
	// without a reference): 0.05 lets 5 % more through than one exact
	// limiter; 0 when nothing was measured.
	Error float64 `json:"error"`
}

// overLimit is how far above its limit a tenant must offer for a span to
// measure the limit against the limit itself (a run without a reference):
// well above, so the limit, not the offer, decides.
const overLimit = 1.5

// overLimitWithReference is the same against the reference, which has the
// same offer: from the limit on, both limit; below it both let everything
// through. Measuring most of the run matters: a sliding window admits in
// bursts a window apart, and a few short spans read the bursts' phase
// (±5 % over 3–4 s in lesson 06's quick runs) rather than the gateways'
// error; at 1.5× a tenant offering 1.5× its limit had half its spans
// left out.
const overLimitWithReference = 1.0

// globalLimits computes the RateLimitSummary from the digests; mu held.
// Nil when no priority has a simple global limit.
func (a *Aggregator) globalLimits(limits map[string]experiment.GlobalLimit) *RateLimitSummary {
	if len(limits) == 0 {
		return nil
	}
	out := &RateLimitSummary{ByPriority: map[string]GlobalLimitCheck{}}
	for _, p := range slices.Sorted(maps.Keys(limits)) {
		lim := limits[p]
		c := GlobalLimitCheck{LimitRPS: round(lim.RPS, 3), Rule: lim.Rule}
		var steady, fault [3]float64 // seconds, admitted, admitted by the reference
		span := lim.Span.D().Seconds()
		hasRef := a.hasReference(p)
		over := overLimit
		if hasRef {
			over = overLimitWithReference
		}
		var prev *digest // the digest before the span's first
		from := 0
		for i := range a.digests {
			d := &a.digests[i]
			start := d.elapsed - d.dt
			if from < i {
				start = a.digests[from].elapsed - a.digests[from].dt
			}
			length := d.elapsed - start
			// A span is the ticks that cover the limit's span to within
			// half a tick (a partial one at the end is left out): a
			// sliding window admits at most its limit in a span of its
			// length, but a span a tick longer can hold two of its bursts
			// (1.25 s of ticks read 132 passes under a limit of 100/s).
			if length+d.dt/2 < span {
				continue
			}
			first := prev == nil
			offered, passed, ref := d.prio[p].offered, d.prio[p].passed, d.prio[p].reference
			if !first {
				offered -= prev.prio[p].offered
				passed -= prev.prio[p].passed
				ref -= prev.prio[p].reference
			}
			prev, from = d, i+1
			// The first span has no counts before it (a recording may start
			// late, its totals counting from the lab's start): it only sets
			// the base.
			if first || float64(offered) < over*lim.RPS*length {
				continue
			}
			acc := &steady
			if a.overlapsFault(start, d.elapsed, span) {
				acc = &fault
			}
			acc[0] += length
			acc[1] += float64(passed)
			acc[2] += float64(ref)
		}
		c.Steady, c.Faults = limitSpan(steady, lim.RPS, hasRef), limitSpan(fault, lim.RPS, hasRef)
		out.ByPriority[p] = c
	}
	return out
}

// limitSpan is the admissions acc (seconds, admitted, admitted by the
// reference) against the reference when the run has one, else the limit.
func limitSpan(acc [3]float64, limit float64, hasRef bool) LimitSpan {
	if acc[0] <= 0 || limit <= 0 {
		return LimitSpan{}
	}
	rps := acc[1] / acc[0]
	sp := LimitSpan{Seconds: round(acc[0], 3), AdmittedRPS: round(rps, 3), Error: round(rps/limit-1, 6)}
	if hasRef && acc[2] > 0 {
		sp.ReferenceRPS = round(acc[2]/acc[0], 3)
		sp.Error = round(acc[1]/acc[2]-1, 6)
	}
	return sp
}

// hasReference reports whether the run recorded a reference limiter's
// admissions for priority p (a sample with a count); mu held.
func (a *Aggregator) hasReference(p string) bool {
	for i := range a.digests {
		if a.digests[i].prio[p].reference > 0 {
			return true
		}
	}
	return false
}

// overlapsFault reports whether [from, to] overlaps a fault's window,
// extended by tail after its end; mu held.
func (a *Aggregator) overlapsFault(from, to, tail float64) bool {
	for _, f := range a.faults {
		end := f.end
		if end < 0 {
			end = math.Inf(1)
		}
		if from < end+tail && to > f.start {
			return true
		}
	}
	return false
}

// globalLimitError is the worst |error| over the priorities measured in
// the steady spans (faults false) or the fault spans (true), and a note
// when nothing was measured.
func (s *Summary) globalLimitError(faults bool) (float64, string) {
	if s.RateLimit == nil {
		return math.NaN(), "no rate-limit rule covers one priority's traffic with one bucket of requests"
	}
	worst, found := 0.0, false
	for _, c := range s.RateLimit.ByPriority {
		sp := c.Steady
		if faults {
			sp = c.Faults
		}
		if sp.Seconds > 0 {
			found = true
			worst = math.Max(worst, math.Abs(sp.Error))
		}
	}
	if !found {
		where := "outside faults"
		if faults {
			where = "during a fault"
		}
		return math.NaN(), fmt.Sprintf("no priority offered over its limit (≥ %g× it without a reference limiter) %s", overLimit, where)
	}
	return round(worst, 6), ""
}

// redisMetric is Metric for the Redis and global-limit metrics.
func (s *Summary) redisMetric(name string) (float64, string) {
	switch name {
	case "global_limit_error":
		return s.globalLimitError(false)
	case "global_limit_error_during_faults":
		return s.globalLimitError(true)
	case "redis_fallbacks":
		if s.Redis.Kind == "" || s.Redis.Kind == experiment.RedisOff {
			return math.NaN(), "no Redis in this run"
		}
		return s.Redis.Fallbacks, ""
	case "redis_failover_s":
		worst, note := math.NaN(), "no cluster master was killed"
		for _, f := range s.Redis.Failovers {
			if f.By == "" {
				return math.Inf(1), "no replica took over " + f.Killed
			}
			if math.IsNaN(worst) || f.AfterS > worst {
				worst, note = f.AfterS, ""
			}
		}
		return worst, note
	}
	return math.NaN(), "unknown metric " + name
}
