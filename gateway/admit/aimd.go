package admit

import (
	"sync"
	"sync/atomic"
	"time"
)

// AIMD is an additive-increase, multiplicative-decrease limit. Samples are
// gathered into windows of about one round trip (max(WindowSamples, limit)
// samples). A window with a drop, or whose mean RTT exceeds Tolerance × the
// no-load baseline (the lowest window mean of the last BaselineWindows
// windows), multiplies the limit by Backoff; any other window in which the
// limit was actually used (some request saw inflight ≥ limit/2) adds 1.
type AIMD struct {
	limit atomic.Int64 // read without mu

	mu   sync.Mutex
	cfg  LimiterConfig // guarded by mu
	est  float64       // guarded by mu; the limit before rounding
	win  window        // guarded by mu
	base baseline      // guarded by mu
}

func newAIMD(cfg LimiterConfig) *AIMD {
	a := &AIMD{cfg: cfg, est: float64(cfg.Limit)}
	a.base.init(cfg.BaselineWindows)
	a.limit.Store(int64(cfg.Limit))
	return a
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return int(a.limit.Load()) }

// OnSample records one finished request.
func (a *AIMD) OnSample(rtt time.Duration, inflight int, dropped bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &a.cfg
	if c.TimeoutMs > 0 && rtt > time.Duration(c.TimeoutMs)*time.Millisecond {
		dropped = true
	}
	lim := int(a.limit.Load())
	if !a.win.add(rtt, inflight, dropped, max(c.WindowSamples, lim)) {
		return
	}
	mean, drops, used := a.win.close(lim)
	base := a.base.add(mean)
	switch {
	case drops > 0 || (mean > 0 && base > 0 && mean > c.Tolerance*base):
		a.est *= c.Backoff
	case used:
		a.est++
	}
	a.est = clampF(a.est, c.Min, c.Max)
	a.limit.Store(int64(a.est + 0.5))
}
