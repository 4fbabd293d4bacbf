package admit

import "math"

// Gradient is a latency-gradient limit in the style of Netflix's Gradient2.
// Each window (about one round trip: max(WindowSamples, limit) samples)
// compares the no-load RTT baseline (long term; measured by periodic
// probes, see LimiterConfig ProbeInterval) with the window's mean RTT
// (short term):
//
//	gradient = clamp(Tolerance × baseline / short, MinGradient, 1)
//	target   = limit × gradient + (gradient == 1 ? sqrt(limit) : 0)
//	limit    = limit + Smoothing × (target − limit)
//
// When the backend queues, short ≈ baseline × limit / capacity, so the
// target is about Tolerance × capacity; when it does not, the limit climbs
// by the queue allowance sqrt(limit) (only while the limit is used). A
// window with drops targets limit × MinGradient. After a decrease the next
// round trip's samples are ignored. The limit starts at the configured
// Limit.
type Gradient struct{ *adaptive }

func newGradient(cfg LimiterConfig) *Gradient { return &Gradient{newAdaptive(cfg, gradientStep)} }

func gradientStep(c *LimiterConfig, est float64, s windowStats) float64 {
	target := est
	switch {
	case s.drops > 0:
		target = est * c.MinGradient
	case s.mean > 0 && s.base > 0:
		grad := s.base / s.mean
		if grad*c.Tolerance >= 1 {
			// Within tolerance: no queue to speak of.
			if s.used {
				target += math.Sqrt(est)
			}
		} else {
			// Aim at the bottom of the tolerance band, so that the
			// climb back (by the queue allowance) centres on capacity.
			target = est * math.Max(c.MinGradient, grad/c.Tolerance)
		}
	}
	step := c.Smoothing
	if target < est {
		step = min(1, gradientDownFactor*step)
	}
	return est + step*(target-est)
}

// gradientDownFactor speeds up decreases: a queue measured at the backend
// gives an accurate target (about its capacity), while increases are
// guesses (the queue allowance) and go slowly.
const gradientDownFactor = 2.5
