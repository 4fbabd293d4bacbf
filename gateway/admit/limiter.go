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

	// Backoff multiplies the AIMD limit on a drop or a congested window,
	// in (0, 1) (default 0.9).
	Backoff float64 `yaml:"backoff" json:"backoff"`
	// Tolerance is how much the window's mean RTT may exceed the no-load
	// baseline before the window counts as congested (AIMD) or the gradient
	// falls below 1 (gradient), ≥ 1 (default 1.1 for AIMD, whose cut is a
	// fixed ×Backoff; 1.05 for gradient, whose cut aims at the bottom of
	// the band). A window's mean RTT is noisy (±5 % blended over two
	// windows of lognormal samples) and so is the baseline (±1–2 %).
	Tolerance float64 `yaml:"tolerance" json:"tolerance"`
	// TimeoutMs: a sample slower than this counts as dropped (0: never).
	TimeoutMs int `yaml:"timeout_ms" json:"timeout_ms"`
	// WindowSamples is the fewest samples that close a measurement window;
	// a window also needs at least Limit samples, about one round trip
	// (default 16).
	WindowSamples int `yaml:"window_samples" json:"window_samples"`
	// ProbeInterval is how many windows pass between baseline probes
	// (default 40, about 10 s at 200 ms round trips). A probe lowers the
	// limit to ProbeFraction of itself until ProbeSamples requests started
	// at that concurrency have finished; their mean RTT is the no-load
	// baseline the adaptive limiters compare with (an EWMA over probes, so
	// a lasting slowdown of the backend becomes the new baseline within a
	// few probes). The first probe runs at the first window.
	ProbeInterval int `yaml:"probe_interval" json:"probe_interval"`
	// ProbeFraction is the probe's share of the limit, in (0, 1)
	// (default 0.5).
	ProbeFraction float64 `yaml:"probe_fraction" json:"probe_fraction"`
	// ProbeSamples is the samples one probe needs (default 64; the first
	// probe takes twice as many).
	ProbeSamples int `yaml:"probe_samples" json:"probe_samples"`
	// Smoothing is the gradient limiter's step toward a higher target per
	// window, in (0, 1] (default 0.2); a lower target is approached 2.5×
	// faster (at most all the way).
	Smoothing float64 `yaml:"smoothing" json:"smoothing"`
	// MinGradient clamps the gradient's fall per window, in (0, 1]
	// (default 0.5).
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
	if c.Tolerance == 0 {
		c.Tolerance = 1.1
		if c.Algorithm == AlgoGradient {
			c.Tolerance = 1.05
		}
	}
	if c.WindowSamples == 0 {
		c.WindowSamples = 48
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 60
	}
	if c.ProbeFraction == 0 {
		c.ProbeFraction = 0.75
	}
	if c.ProbeSamples == 0 {
		c.ProbeSamples = 128
	}
	if c.Smoothing == 0 {
		c.Smoothing = 0.2
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
	if bad(c.Tolerance) || (c.Tolerance != 0 && c.Tolerance < 1) {
		return fmt.Errorf("admit: limiter field tolerance: %v, want ≥ 1", c.Tolerance)
	}
	if c.TimeoutMs < 0 {
		return fmt.Errorf("admit: limiter field timeout_ms: %d, want ≥ 0", c.TimeoutMs)
	}
	if c.WindowSamples < 0 {
		return fmt.Errorf("admit: limiter field window_samples: %d, want ≥ 1", c.WindowSamples)
	}
	if c.ProbeInterval < 0 {
		return fmt.Errorf("admit: limiter field probe_interval: %d, want ≥ 1", c.ProbeInterval)
	}
	if bad(c.ProbeFraction) || c.ProbeFraction < 0 || c.ProbeFraction >= 1 {
		return fmt.Errorf("admit: limiter field probe_fraction: %v, want a value in (0, 1)", c.ProbeFraction)
	}
	if c.ProbeSamples < 0 {
		return fmt.Errorf("admit: limiter field probe_samples: %d, want ≥ 1", c.ProbeSamples)
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
