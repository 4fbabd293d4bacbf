package admit

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// Limiter is a concurrency limit that may adapt to what it observes (the
// Netflix concurrency-limits family). Limit is the number of requests that
// may be in flight now; OnSample reports one finished request: its round
// trip time, how many were in flight when it started (including itself),
// and whether it was dropped (failed, timed out or was rejected upstream).
// Implementations are safe for concurrent use and Limit never blocks.
type Limiter interface {
	Limit() int
	OnSample(rtt time.Duration, inflight int, dropped bool)
}

// LimiterFunc adapts a function returning the current limit to Limiter, for
// a limit decided elsewhere; it ignores samples.
type LimiterFunc func() int

// Limit calls f.
func (f LimiterFunc) Limit() int { return f() }

// OnSample does nothing.
func (f LimiterFunc) OnSample(time.Duration, int, bool) {}

// The limiter algorithms.
const (
	AlgoStatic   = "static"
	AlgoAIMD     = "aimd"
	AlgoGradient = "gradient"
)

// LimiterConfig selects and tunes a Limiter. Zero knobs take the defaults
// named in their comments; invalid values are errors (Validate).
type LimiterConfig struct {
	// Algorithm is "static", "aimd" or "gradient".
	Algorithm string `yaml:"algorithm" json:"algorithm"`
	// Limit is the static limit, or the adaptive limiters' initial limit
	// (they start here, not at Min: starting low under-fills the backend
	// for many seconds). Required, ≥ 1.
	Limit int `yaml:"limit" json:"limit"`
	// Min and Max bound an adaptive limit (defaults 1 and max(4×Limit, 64));
	// Min ≤ Limit ≤ Max. Unused by static.
	Min int `yaml:"min" json:"min"`
	Max int `yaml:"max" json:"max"`

	// Backoff multiplies the AIMD limit on a congested window, in (0, 1)
	// (default 0.9).
	Backoff float64 `yaml:"backoff" json:"backoff"`
	// QueueTarget is the estimated backend queue (requests waiting in the
	// nodes' own queues, summed) above which a window counts as congested,
	// > 0 (default 3). The gradient limiter then cuts to its capacity
	// estimate and climbs again while the queue reads at most this; AIMD
	// backs off above 4/3 × QueueTarget. A couple of queued requests keep
	// every slot busy between completions; the margin also absorbs the
	// queue estimate's noise (±2 requests) and a baseline error: a
	// baseline biased low by more than QueueTarget's worth of wait reads
	// as a standing queue and sinks the limit until the next probes fix it.
	QueueTarget float64 `yaml:"queue_target" json:"queue_target"`
	// TimeoutMs: a sample slower than this counts as dropped (0: never).
	TimeoutMs int `yaml:"timeout_ms" json:"timeout_ms"`
	// WindowSamples is the fewest samples that close a measurement window;
	// a window also needs at least twice the limit (about two round trips)
	// and at most maxWindow (default 96, about half a second at 200 req/s:
	// the p25 of 96 lognormal samples varies by ±7 %, ±2 requests in the
	// queue estimate; longer windows are steadier but react slower).
	WindowSamples int `yaml:"window_samples" json:"window_samples"`
	// Quantile is the RTT quantile a window is summarised by, in (0, 1)
	// (default 0.25). A queue adds about the same wait to every request,
	// so a low quantile shifts by the same milliseconds as the median but
	// from a smaller value and with less noise: the best signal-to-noise
	// for the lab's lognormal service times is between p10 and p25.
	Quantile float64 `yaml:"quantile" json:"quantile"`
	// Smoothing sets the gradient limiter's steps, in (0, 1] (default
	// 0.5): a congested window moves the limit 2×Smoothing (at most all)
	// of the way to its capacity estimate, and a calm one adds
	// 1 + Smoothing × (QueueTarget − queue) (see Gradient).
	Smoothing float64 `yaml:"smoothing" json:"smoothing"`
	// MinGradient bounds one window's decrease: the limit falls at most to
	// MinGradient × itself, in (0, 1] (default 0.5).
	MinGradient float64 `yaml:"min_gradient" json:"min_gradient"`
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
	if c.QueueTarget == 0 {
		c.QueueTarget = 3
	}
	if c.WindowSamples == 0 {
		c.WindowSamples = 96
	}
	if c.Quantile == 0 {
		c.Quantile = 0.25
	}
	if c.Smoothing == 0 {
		c.Smoothing = 0.5
	}
	if c.MinGradient == 0 {
		c.MinGradient = 0.5
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
	if bad(c.QueueTarget) || c.QueueTarget < 0 {
		return fmt.Errorf("admit: limiter field queue_target: %v, want > 0", c.QueueTarget)
	}
	if c.TimeoutMs < 0 {
		return fmt.Errorf("admit: limiter field timeout_ms: %d, want ≥ 0", c.TimeoutMs)
	}
	if c.WindowSamples < 0 {
		return fmt.Errorf("admit: limiter field window_samples: %d, want ≥ 1", c.WindowSamples)
	}
	if bad(c.Quantile) || c.Quantile < 0 || c.Quantile >= 1 {
		return fmt.Errorf("admit: limiter field quantile: %v, want a value in (0, 1)", c.Quantile)
	}
	if bad(c.Smoothing) || c.Smoothing < 0 || c.Smoothing > 1 {
		return fmt.Errorf("admit: limiter field smoothing: %v, want a value in (0, 1]", c.Smoothing)
	}
	if bad(c.MinGradient) || c.MinGradient < 0 || c.MinGradient > 1 {
		return fmt.Errorf("admit: limiter field min_gradient: %v, want a value in (0, 1]", c.MinGradient)
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
func (s *Static) OnSample(time.Duration, int, bool) {}

// Set changes the limit (values < 1 mean 1).
func (s *Static) Set(n int) { s.n.Store(int64(max(n, 1))) }
