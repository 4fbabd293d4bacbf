package admit

import "math"

// Gradient is a queue-estimating limit in the style of TCP Vegas. Each
// window (max(WindowSamples, 2×limit) samples, about two round trips)
// estimates the requests waiting at the backend from how far the window's
// RTT quantile sits above its no-load baseline (see adaptive) and steers
// that queue to QueueTarget:
//
//	queue > QueueTarget:  limit −= Smoothing × (queue − QueueTarget)
//	                      (at most down to MinGradient × limit)
//	otherwise, if used:   limit += Smoothing × sqrt(limit)
//
// Above capacity C the queue is limit − C, so a decrease aims straight at
// C + QueueTarget: after losing a node the limit gets there in a few
// windows, with no overshoot from a noisy ratio. Below capacity the queue
// reads ≈ 0 whatever the distance to C, so the limit climbs by a queue
// allowance (about 3 per window at 32) until the queue shows; that is how
// it finds a returned node. Noise in the queue estimate (±1–2 requests)
// moves the limit by half as much, symmetrically, so it does not ratchet
// down. A window with more than dropShare drops (time-outs, 5xx) is
// congestion whatever its RTT: the limit is multiplied by Backoff.
// "used" means some request saw inflight ≥ limit/2; an idle limiter does
// not grow.
type Gradient struct{ *adaptive }

func newGradient(cfg LimiterConfig) *Gradient { return &Gradient{newAdaptive(cfg, gradientStep)} }

// maxClimbShift caps the climb's doubling: after k calm windows in a row
// the climb is 2^min(k, maxClimbShift) times the proportional step.
const maxClimbShift = 3

// dropShare is the share of dropped samples above which a window counts
// as congested.
const dropShare = 0.05

func gradientStep(c *LimiterConfig, est float64, s windowStats) float64 {
	switch {
	case float64(s.drops) > dropShare*float64(s.n):
		return est * c.Backoff
	case s.queue > c.QueueTarget:
		return math.Max(est-c.Smoothing*(s.queue-c.QueueTarget), est*c.MinGradient)
	case s.used:
		return est + (1+c.Smoothing*(c.QueueTarget-s.queue))*float64(int(1)<<min(max(s.calm-1, 0), maxClimbShift))
	}
	return est
}
