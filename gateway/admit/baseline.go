package admit

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// adaptive is the machinery the AIMD and Gradient limiters share: sample
// windows, the baseline probe, and the pause after a decrease. step is the
// algorithm.
type adaptive struct {
	limit atomic.Int64 // the effective limit, read without mu

	mu    sync.Mutex
	cfg   LimiterConfig                                              // guarded by mu
	est   float64                                                    // guarded by mu; the limit outside probes
	win   window                                                     // guarded by mu
	probe prober                                                     // guarded by mu
	skip  int                                                        // guarded by mu; samples to ignore after a decrease
	short float64                                                    // guarded by mu; EWMA of window means, 0 after a decrease
	step  func(c *LimiterConfig, est float64, s windowStats) float64 // fixed
}

// windowStats summarises a closed window.
type windowStats struct {
	mean  float64 // seconds, over samples not dropped; 0 when all dropped
	base  float64 // the no-load baseline, seconds; 0 before the first probe
	drops int
	used  bool // some request saw inflight ≥ limit/2
}

func newAdaptive(cfg LimiterConfig, step func(*LimiterConfig, float64, windowStats) float64) *adaptive {
	a := &adaptive{cfg: cfg, est: float64(cfg.Limit), step: step}
	a.probe.init(&a.cfg)
	a.limit.Store(int64(cfg.Limit))
	return a
}

func (a *adaptive) Limit() int { return int(a.limit.Load()) }

func (a *adaptive) OnSample(rtt time.Duration, inflight int, dropped bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &a.cfg
	if c.TimeoutMs > 0 && rtt > time.Duration(c.TimeoutMs)*time.Millisecond {
		dropped = true
	}
	switch a.probe.phase {
	case probeRunning:
		if a.probe.add(rtt, inflight, dropped) {
			a.store() // the probe has its samples: back to the estimate
		}
		return
	case probeTail:
		if a.probe.tail(rtt, inflight, dropped) {
			return // a probe sample: not part of the window
		}
	}
	if a.skip > 0 {
		a.skip--
		return
	}
	size := max(c.WindowSamples, int(a.est+0.5))
	if !a.win.add(rtt, inflight, dropped, size) {
		return
	}
	s := a.win.close(int(a.est + 0.5))
	s.base = a.probe.base
	if s.mean > 0 {
		if a.short == 0 {
			a.short = s.mean
		} else {
			a.short += shortWeight * (s.mean - a.short)
		}
		s.mean = a.short
	}
	next := clampF(a.step(c, a.est, s), c.Min, c.Max)
	if next < a.est {
		// The next round trip's samples started before the decrease.
		a.skip, a.short = size, 0
	}
	a.est = next
	if a.probe.windowClosed() && a.probe.phase == probeIdle {
		f := c.ProbeFraction
		if a.probe.base == 0 {
			// The first probe must find no queue whatever the initial
			// limit: go lower.
			f = min(f, firstProbeFraction)
		}
		a.probe.start(int(a.est*f+0.5), size)
		a.limit.Store(int64(a.probe.limit))
		return
	}
	a.store()
}

func (a *adaptive) store() { a.limit.Store(int64(a.est + 0.5)) }

// estimate returns the limit outside probes and whether a probe lowers the
// limit now.
func (a *adaptive) estimate() (float64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.est, a.probe.phase == probeRunning
}

// window gathers the samples of one measurement window.
type window struct {
	n, drops    int
	ok          int
	sum         float64 // seconds, over samples not dropped
	maxInflight int
}

// add records a sample and reports whether the window holds size samples.
func (w *window) add(rtt time.Duration, inflight int, dropped bool, size int) bool {
	w.n++
	if dropped {
		w.drops++
	} else {
		w.sum += rtt.Seconds()
		w.ok++
	}
	w.maxInflight = max(w.maxInflight, inflight)
	return w.n >= size
}

// close summarises and resets the window; lim is the limit it ran under.
func (w *window) close(lim int) windowStats {
	var s windowStats
	if w.ok > 0 {
		s.mean = w.sum / float64(w.ok)
	}
	s.drops, s.used = w.drops, 2*w.maxInflight >= lim
	*w = window{}
	return s
}

// shortWeight is the weight of a new window in the short-term RTT: window
// means are noisy (±7 % at 48 lognormal samples), so two windows are
// blended; after a decrease the blend restarts.
const shortWeight = 0.5

// probeAverage is how many probes the baseline averages (a running mean,
// then an EWMA of weight 1/probeAverage); probeRestart is the ratio of a
// probe's mean to the baseline beyond which the baseline restarts from it.
const (
	probeAverage = 8
	probeRestart = 1.2
	// firstProbeFraction caps the first probe's share of the limit.
	firstProbeFraction = 0.5
)

// Probe phases.
const (
	probeIdle    = iota
	probeRunning // the limit is lowered; collecting samples
	probeTail    // the limit is back; collecting the probe's stragglers
)

// prober measures the no-load RTT baseline. With lognormal service times a
// window's mean RTT is noisy (±7 % at 48 samples), so the lowest recent
// window mean is biased low, and a plain long-term EWMA drifts up with any
// standing queue (Gradient2's known drift). Instead, every ProbeInterval
// windows the limiter lowers its limit to ProbeFraction of itself (the idea
// of BBR's ProbeRTT) and averages the RTT of the requests that started at
// that concurrency (inflight ≤ the probe limit): they found no queue at the
// backend as long as the probe limit is at most its capacity. Requests
// still running when the probe has its samples are long ones; leaving them
// out would bias the mean low, so after the limit is restored the probe
// keeps collecting them (they still carry inflight ≤ the probe limit) for
// up to four windows. One probe's mean is itself noisy, so the baseline is
// the running mean of the first four probes, then an EWMA with weight ¼.
// The first probe takes twice the samples.
type prober struct {
	base     float64 // seconds; 0 until the first probe ends
	windows  int     // windows since the last probe
	phase    int
	limit    int // the probe's limit
	n        int
	sum      float64
	left     int // tail: stragglers still expected
	budget   int // tail: samples left before giving up on stragglers
	window   int // window size when the probe started
	interval int
	fraction float64
	samples  int
	probes   int        // probes done
	off      [3]float64 // recent probe means far off the baseline
	offN     int        // how many of off are set
	offSide  int        // +1 above, -1 below, 0 none
}

func (p *prober) init(c *LimiterConfig) {
	p.interval, p.fraction, p.samples = c.ProbeInterval, c.ProbeFraction, c.ProbeSamples
}

// windowClosed counts a window and reports whether a probe should start.
func (p *prober) windowClosed() bool {
	p.windows++
	if p.base == 0 {
		// The first probe waits two windows: requests from the ramp-up
		// may carry a low inflight and would pass for probe samples.
		return p.windows >= 2
	}
	if p.probes < probeAverage/2 {
		return p.windows >= max(p.interval/5, 4)
	}
	return p.windows >= p.interval
}

// start begins a probe at limit lim; window is the current window size.
func (p *prober) start(lim, window int) {
	p.phase, p.limit, p.n, p.sum, p.window = probeRunning, max(lim, 1), 0, 0, window
}

// add records a sample while the limit is lowered and reports whether the
// probe has its samples (the limit may be restored).
func (p *prober) add(rtt time.Duration, inflight int, dropped bool) bool {
	if dropped || inflight > p.limit {
		return false // started before the probe, or failed
	}
	p.n++
	p.sum += rtt.Seconds()
	if p.n < p.samples {
		return false
	}
	p.phase, p.left, p.budget = probeTail, p.limit, 4*p.window
	return true
}

// tail records a sample after the limit was restored and reports whether
// it was one of the probe's own.
func (p *prober) tail(rtt time.Duration, inflight int, dropped bool) bool {
	p.budget--
	own := inflight <= p.limit
	if own {
		p.left--
		if !dropped {
			p.n++
			p.sum += rtt.Seconds()
		}
	}
	if p.left <= 0 || p.budget <= 0 {
		p.finish()
	}
	return own
}

func (p *prober) finish() {
	mean := p.sum / float64(max(p.n, 1))
	// Three probes in a row far off the baseline on the same side mean the
	// backend's service time changed (or an earlier probe ran on a queue):
	// restart the baseline from their median. One such probe is noise.
	off := 0
	switch {
	case p.base > 0 && mean > p.base*probeRestart:
		off = 1
	case p.base > 0 && mean < p.base/probeRestart:
		off = -1
	}
	if off == 0 || off != p.offSide {
		p.offN = 0
	}
	p.offSide = off
	if off != 0 {
		p.off[p.offN] = mean
		p.offN++
		if p.offN == len(p.off) {
			o := p.off
			slices.Sort(o[:])
			p.base, p.probes, p.offN, p.offSide = o[1], 4, 0, 0
			p.phase, p.windows = probeIdle, 0
			return
		}
	}
	p.probes++
	p.base += (mean - p.base) / float64(min(p.probes, probeAverage))
	p.phase, p.windows = probeIdle, 0
}

func clampF(v float64, lo, hi int) float64 {
	return math.Max(float64(lo), math.Min(float64(hi), v))
}

// estimator is implemented by the adaptive limiters (for tests and stats).
type estimator interface {
	estimate() (est float64, probing bool)
}
