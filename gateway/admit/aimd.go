package admit

import "math"

// AIMD is an additive-increase, multiplicative-decrease limit on the same
// windows and queue estimate as Gradient (see adaptive): a window whose
// estimated backend queue exceeds 4/3 × QueueTarget (4 requests at the
// default), or with more than dropShare drops, multiplies the limit by
// Backoff; any other window in which the limit was reached (some request
// saw inflight ≥ limit − 1) adds max(1, Smoothing × sqrt(limit)/2). It
// saw-tooths around capacity rather than aiming at it.
type AIMD struct{ *adaptive }

func newAIMD(cfg LimiterConfig) *AIMD { return &AIMD{newAdaptive(cfg, aimdStep)} }

func aimdStep(c *LimiterConfig, est float64, s windowStats) float64 {
	switch {
	case float64(s.drops) > dropShare*float64(s.n) || s.queue > aimdQueueShare*c.QueueTarget:
		return est * c.Backoff
	case s.used:
		return est + math.Max(1, c.Smoothing*math.Sqrt(est)/2)
	}
	return est
}

// aimdQueueShare × QueueTarget is the queue estimate above which AIMD
// backs off. AIMD has no aim: its saw-tooth peaks at this threshold, and
// its ×0.9 cuts are large, so a lower one sinks the limit whenever the
// baseline reads a little low, and a higher one sits it far above
// capacity.
const aimdQueueShare = 4.0 / 3
