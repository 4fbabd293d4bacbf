package admit

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// Sample is one finished request as a Limiter sees it.
type Sample struct {
	// RTT is how long the request held its place at the backend: from
	// the upstream call's start to its end (the whole stream for a
	// stream). It is the holding time that Little's law needs. RTT ≤ 0
	// means no sample (the request never reached the backend).
	RTT time.Duration
	// Latency is the congestion signal: the part of the round trip that a
	// queue at the backend lengthens and the request's own size does not.
	// For a stream it is the time to first token (a long answer is not
	// congestion); 0 means RTT.
	Latency time.Duration
	// Inflight is how many requests were in flight when this one started,
	// itself included.
	Inflight int
	// Dropped reports a failure that signals overload: the deadline
	// passed, or the backend refused (429) or failed (5xx).
	Dropped bool
	// Refused reports a drop because the backend answered that it is full
	// (429 from every node tried): it refuses at its capacity rather than
	// queueing (see adaptive.queueBase). A dead node's fast errors are
	// not refusals of this kind.
	Refused bool
	// End is when the call ended, if the caller read the clock for its RTT
	// anyway; zero means the limiter reads it (a clock read is a large
	// part of a sample's cost).
	End time.Time
	// Ticket is the request's ticket from a Ticketer limiter (set by the
	// Bulkhead).
	Ticket uint64
}

// signal returns Latency, or RTT when Latency is unset.
func (s *Sample) signal() time.Duration {
	if s.Latency > 0 {
		return s.Latency
	}
	return s.RTT
}

// Limiter is a concurrency limit that may adapt to what it observes (the
// Netflix concurrency-limits family). Limit is the number of requests that
// may be in flight now; OnSample reports one finished request, every one
// admitted under the limit (a Sample with RTT ≤ 0 carries no measurement).
// Implementations are safe for concurrent use; Limit never blocks and
// neither allocates.
type Limiter interface {
	Limit() int
	OnSample(Sample)
}

// Ticketer is implemented by a Limiter that numbers the requests it
// admits: the Bulkhead calls Ticket at each grant and hands the number
// back in the request's Sample. It lets the limiter judge requests by
// when they were admitted (a round trip is a cohort of tickets) rather
// than by when they finished, which favours the fast ones. Ticket never
// blocks.
type Ticketer interface {
	Ticket() uint64
}

// LatencyObserver is implemented by a Limiter that takes a request's
// latency signal before the request ends (a stream's time to first
// token), so that it need not wait for long streams to judge a round
// trip. See Permit.Observe.
type LatencyObserver interface {
	OnLatency(ticket uint64, inflight int, latency time.Duration)
}

// SafeLimiter is implemented by a Limiter that explores above the
// concurrency the backend last took without refusing (429): Safe returns
// that concurrency, or 0 when there is no such restriction. The Bulkhead
// admits at most Safe P0 and P1 requests at once, and P2 in the places
// they leave, up to Limit: P2 explores above the safe level, so that a
// refusal while the limiter looks for capacity falls mostly on P2, and a
// freed place goes to a waiting P0 or P1 first as long as fewer than
// Safe of them are in flight (P2 that refill the places above the safe
// level never starve them).
type SafeLimiter interface {
	Safe() int
}

// ticket returns l's next ticket, or 0 when l does not number requests.
func ticket(l Limiter) uint64 {
	if t, ok := l.(Ticketer); ok {
		return t.Ticket()
	}
	return 0
}

// LimiterFunc adapts a function returning the current limit to Limiter, for
// a limit decided elsewhere; it ignores samples.
type LimiterFunc func() int

// Limit calls f.
func (f LimiterFunc) Limit() int { return f() }

// OnSample does nothing.
func (f LimiterFunc) OnSample(Sample) {}

// The limiter algorithms.
const (
	AlgoStatic   = "static"
	AlgoAIMD     = "aimd"
	AlgoGradient = "gradient"
)

// LimiterConfig selects and tunes a Limiter. Zero knobs take the defaults
// named in their comments; invalid values are errors (Validate). None of
// the adaptive limiters' knobs is a time, a rate or a sample count: they
// measure those (see adaptive).
type LimiterConfig struct {
	// Algorithm is "static", "aimd" or "gradient".
	Algorithm string `yaml:"algorithm" json:"algorithm"`
	// Limit is the static limit, or the adaptive limiters' initial limit:
	// the start-up search measures from there, above or below the
	// backend's capacity. Required, ≥ 1.
	Limit int `yaml:"limit" json:"limit"`
	// Min and Max bound an adaptive limit (defaults 1 and max(4×Limit, 64));
	// Min ≤ Limit ≤ Max. Unused by static.
	Min int `yaml:"min" json:"min"`
	Max int `yaml:"max" json:"max"`

	// Backoff multiplies the AIMD limit on a congested window, in (0, 1)
	// (default 0.9).
	Backoff float64 `yaml:"backoff" json:"backoff"`
	// TimeoutMs: a sample slower than this counts as dropped (0: never).
	TimeoutMs int `yaml:"timeout_ms" json:"timeout_ms"`
	// Trim is the share of each window's slowest requests its statistic
	// leaves out, in [0, 1) (default 0.5: the mean of the fastest half). A
	// queue adds about the same wait to every request, so the fastest
	// requests' mean shifts by it, with less noise than the whole mean and
	// immune to the tail.
	Trim float64 `yaml:"trim" json:"trim"`
}

var keepOverride float64

// keep is the share of a window its statistic keeps.
func (c *LimiterConfig) keep() float64 {
	if keepOverride > 0 {
		return keepOverride
	}
	if c.Trim == 0 {
		return 0.5
	}
	return 1 - c.Trim
}

// withDefaults returns c with zero knobs replaced by their defaults.
func (c LimiterConfig) withDefaults() LimiterConfig {
	if c.Min == 0 {
		c.Min = 1
	}
	if c.Max == 0 {
		c.Max = max(4*c.Limit, 64)
	}
	if c.Backoff == 0 {
		c.Backoff = 0.9
	}
	return c
}

// Validate reports the first invalid field of c, naming it.
func (c LimiterConfig) Validate() error {
	switch c.Algorithm {
	case AlgoStatic, AlgoAIMD, AlgoGradient:
	case "":
		return fmt.Errorf("admit: limiter field algorithm: missing, want static, aimd or gradient")
	default:
		return fmt.Errorf("admit: limiter field algorithm: %q, want static, aimd or gradient", c.Algorithm)
	}
	if c.Limit < 1 {
		return fmt.Errorf("admit: limiter field limit: %d, want ≥ 1", c.Limit)
	}
	if c.Algorithm == AlgoStatic {
		return nil
	}
	if c.Min < 0 {
		return fmt.Errorf("admit: limiter field min: %d, want ≥ 1 (0 means 1)", c.Min)
	}
	if c.Max < 0 {
		return fmt.Errorf("admit: limiter field max: %d, want ≥ limit (0 means max(4×limit, 64))", c.Max)
	}
	d := c.withDefaults()
	if d.Min > d.Limit {
		return fmt.Errorf("admit: limiter field min: %d, want ≤ limit %d", d.Min, d.Limit)
	}
	if d.Max < d.Limit {
		return fmt.Errorf("admit: limiter field max: %d, want ≥ limit %d", d.Max, d.Limit)
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if bad(c.Backoff) || c.Backoff < 0 || c.Backoff >= 1 {
		return fmt.Errorf("admit: limiter field backoff: %v, want a value in (0, 1)", c.Backoff)
	}
	if c.TimeoutMs < 0 {
		return fmt.Errorf("admit: limiter field timeout_ms: %d, want ≥ 0", c.TimeoutMs)
	}
	if bad(c.Trim) || c.Trim < 0 || c.Trim >= 1 {
		return fmt.Errorf("admit: limiter field trim: %v, want a value in [0, 1)", c.Trim)
	}
	return nil
}

// NewLimiter validates cfg and builds its Limiter.
func NewLimiter(cfg LimiterConfig) (Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	switch cfg.Algorithm {
	case AlgoAIMD:
		return newAIMD(cfg), nil
	case AlgoGradient:
		return newGradient(cfg), nil
	}
	return NewStatic(cfg.Limit), nil
}

// Static is a fixed limit.
type Static struct{ n atomic.Int64 }

// NewStatic returns a static limit of n (values < 1 mean 1).
func NewStatic(n int) *Static {
	s := &Static{}
	s.Set(n)
	return s
}

// Limit returns the limit.
func (s *Static) Limit() int { return int(s.n.Load()) }

// OnSample does nothing.
func (s *Static) OnSample(Sample) {}

// Set changes the limit (values < 1 mean 1).
func (s *Static) Set(n int) { s.n.Store(int64(max(n, 1))) }
