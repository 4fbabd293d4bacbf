package admit

// AIMD is an additive-increase, multiplicative-decrease limit. Samples are
// gathered into windows of about one round trip (max(WindowSamples, limit)
// samples). A window with a drop, or whose mean RTT exceeds Tolerance × the
// no-load baseline (measured by periodic probes, see LimiterConfig
// ProbeInterval), multiplies the limit by Backoff, and the next round
// trip's samples are ignored (they started before the cut); any other
// window in which the limit was used (some request saw inflight ≥ limit/2)
// adds 1. The limit starts at the configured Limit.
type AIMD struct{ *adaptive }

func newAIMD(cfg LimiterConfig) *AIMD { return &AIMD{newAdaptive(cfg, aimdStep)} }

func aimdStep(c *LimiterConfig, est float64, s windowStats) float64 {
	switch {
	case s.drops > 0 || (s.base > 0 && s.mean > c.Tolerance*s.base):
		return est * c.Backoff
	case s.used && s.base > 0:
		return est + 1
	}
	return est
}
