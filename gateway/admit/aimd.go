package admit

import "math"

// AIMD is an additive-increase, multiplicative-decrease limit on the same
// windows, queue estimate and noise as Gradient (see adaptive): a window
// whose estimated backend queue is significantly above the target, or
// with more than dropShare drops, multiplies the limit by Backoff; a
// window at or below the target in which the limit was reached adds
// max(1, √limit / 2). It saw-tooths around capacity rather than aiming at
// it.
type AIMD struct{ *adaptive }

func newAIMD(cfg LimiterConfig) *AIMD { return &AIMD{newAdaptive(cfg, aimdStep)} }

func aimdStep(a *adaptive, s *windowStats) float64 {
	switch {
	case s.congested():
		return a.est * a.cfg.Backoff
	case s.queue <= s.target && s.used:
		return a.est + math.Max(1, math.Sqrt(a.est)/2)
	}
	return a.est
}
