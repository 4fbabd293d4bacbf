package admit

import "math"

// Gradient is a queue-estimating limit in the style of TCP Vegas. Each
// window (max(WindowSamples, 2×limit) samples, about two round trips)
// estimates the requests waiting at the backend from how far the window's
// RTT quantile sits above its no-load baseline (see adaptive). The
// window's requests started at a mean concurrency of inflight, so the
// backend's capacity is about inflight − queue, and
//
//	queue > QueueTarget:  limit += 2×Smoothing × (inflight − queue − limit)
//	                      (at most down to MinGradient × limit)
//	otherwise, if used:   limit += (1 + Smoothing × (QueueTarget − queue)) × 2^(k−2)
//
// where k counts the calm windows (queue ≤ QueueTarget) before this one in
// a row (the factor is between 1 and 4); a window up to calmNoise ×
// QueueTarget is noise and neither counts nor breaks the run. A decrease aims
// at the capacity itself (the climbs that follow put a couple of requests
// back in the queue: the limit saw-tooths between capacity and where the
// queue reads above QueueTarget), measured against the concurrency the
// window actually ran at, so the windows after a cut, whose requests started
// under the old, higher limit, aim at the same place instead of cutting
// again (no undershoot after a node loss). Below capacity the queue reads
// ≈ 0 whatever the distance to it, so the limit climbs, doubling its step
// while windows stay calm, until the queue shows: that is how it finds a
// returned node within a few windows. Noise in the queue estimate (±2
// requests) moves the limit by about as much either way, so it does not
// ratchet. A window with more than dropShare drops (time-outs, 5xx) is
// congestion whatever its RTT: the limit is multiplied by Backoff. "used"
// means the limit was reached (some request saw inflight ≥ limit − 1):
// while demand stays under the limit the limit does not grow, or it would
// run away to Max with nothing measured there.
type Gradient struct{ *adaptive }

func newGradient(cfg LimiterConfig) *Gradient { return &Gradient{newAdaptive(cfg, gradientStep)} }

// maxClimbShift caps the climb's doubling: after k calm windows in a row
// (counted before this one) the climb is 2^min(k−2, maxClimbShift) times
// the proportional step: one or two calm windows are no evidence yet.
const maxClimbShift = 2

// dropShare is the share of dropped samples above which a window counts
// as congested.
const dropShare = 0.05

func gradientStep(c *LimiterConfig, est float64, s windowStats) float64 {
	switch {
	case float64(s.drops) > dropShare*float64(s.n):
		return est * c.Backoff
	case s.queue > c.QueueTarget:
		target := s.inflight - s.queue
		return math.Max(est+math.Min(1, 2*c.Smoothing)*(target-est), est*c.MinGradient)
	case s.used:
		return est + (1+c.Smoothing*(c.QueueTarget-s.queue))*float64(int(1)<<min(max(s.calm-2, 0), maxClimbShift))
	}
	return est
}
