package admit

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// adaptive is the machinery the AIMD and Gradient limiters share: sample
// windows summarised by a robust RTT quantile, the no-load baseline, and
// the estimate of the queue at the backend. step is the algorithm.
//
// # Why a quantile, and what it estimates
//
// The lab's backends serve lognormal times (p50 200 ms, p99 600 ms): a
// window's mean is dominated by its few slowest requests and varies by
// ±5–7 %, which an RTT-ratio limiter (Gradient2: limit × baseline/mean)
// turns into limit cuts of the same size; since cuts are fast and climbs
// slow, noise alone held the limit 20–50 % under capacity. A queue at the
// backend adds about the same wait W to every request, so every quantile
// shifts by W; a low quantile (Quantile, default p25) is shifted by the
// same milliseconds from a smaller value, with less noise, and is immune
// to the tail. Little's law turns the wait into requests: the backend
// completes X = inflight / mean RTT per second, so
//
//	queue ≈ (stat − baseline) × X
//
// where stat is the window's quantile and baseline the same quantile with
// no queue. The capacity estimate is then inflight − queue, in requests,
// with an error of about ±2 requests per window of 96 samples (±7 % of a
// p25 near 145 ms is ±10 ms, times 143–215 req/s). The mean RTT, which
// the tail dominates, only enters as the throughput X, where ±5 % is ±5 %
// of the queue, not of the limit.
//
// # The baseline
//
// The baseline is the quantile with no queue. It cannot be read off the
// windows: a limiter that keeps a few requests queued never sees a window
// without queue, and any estimator fed by its windows absorbs that queue
// (Gradient2's drift: the limit then creeps up), while the lowest recent
// window is biased low by the noise (a min-RTT baseline reads every window
// as queued and sinks the limit to Min). So it is measured by probes, as
// in BBR's ProbeRTT: the limit drops to probeFraction (0.8) of itself
// until a window of requests that started at that concurrency has
// finished; below capacity they found no queue. A probe costs about one
// window at 80 % of the limit every probeEvery (16) windows — the nodes
// lose ~1–2 % of their fill, where the old probes at 50–75 % showed as
// deep dips — and only starts after a window with no excess queue (else
// the probe's limit might still be above capacity); after 1.5 intervals
// with no calm window it runs anyway, since then the baseline itself is
// suspect. Requests that did not start under the probe keep filling the
// measurement windows meanwhile, so a node lost during a probe is seen at
// once; a probe that reads as a queue against an established baseline is
// ignored (up to twice in a row: then the backend really got slower).
// One probe's quantile varies by ±6 % (±2 requests in the queue
// estimate), so the baseline is the running mean of the first
// probeAverage probes (which come 4× as often), then an EWMA of weight
// 1/probeAverage: ±2–3 ms. A lasting change of the backend's service time
// becomes the new baseline within a few probes. The first probe runs at
// half the initial limit with twice the samples, and waits until demand
// reaches the limit: measured on a quiet machine the baseline is lower
// than what the loaded one shows with no queue (the lab's processes share
// two CPUs), which would read as a standing queue and sink the limit.
//
// The remaining weakness: a baseline that reads low by more than
// QueueTarget's worth of wait (≈ 14 ms here) makes every window look
// congested and the limit sinks until probes correct it (seconds in the
// simulation's worst seed; the simulation test checks the fill).
//
// The gradient and AIMD steps (gradientStep, aimdStep) act on the queue
// estimate. The limit starts at the configured Limit.
type adaptive struct {
	limit atomic.Int64 // the effective limit, read without mu

	mu      sync.Mutex
	cfg     LimiterConfig                                              // guarded by mu
	est     float64                                                    // guarded by mu; the limit outside probes
	win     window                                                     // guarded by mu; the current measurement window
	pwin    window                                                     // guarded by mu; the current probe's samples
	base    float64                                                    // guarded by mu; baseline quantile, seconds; 0 until the first probe ends
	probes  int                                                        // guarded by mu; probes done
	windows int                                                        // guarded by mu; windows since the last probe
	probe   prober                                                     // guarded by mu
	calm    int                                                        // guarded by mu; consecutive windows with no excess queue
	rejects int                                                        // guarded by mu; suspect probes ignored in a row
	step    func(c *LimiterConfig, est float64, s windowStats) float64 // fixed
}

// windowStats summarises a closed window.
type windowStats struct {
	stat  float64 // the window's RTT quantile, seconds (drops count as slowest)
	base  float64 // the baseline quantile, seconds
	queue float64 // estimated requests waiting at the backend, ≥ 0
	// inflight is the window's mean in flight at the start of its
	// requests: the concurrency the queue estimate refers to (after a
	// decrease, the old limit's requests are still finishing).
	inflight float64
	drops    int
	n        int
	used     bool // the limit was reached: some request saw inflight ≥ limit − 1
	calm     int  // consecutive earlier windows with queue ≤ QueueTarget
}

// calmNoise: a window whose queue estimate is above QueueTarget but at
// most calmNoise × QueueTarget neither extends nor breaks a run of calm
// windows (see Gradient): the estimate varies by ±2 requests, and a climb
// that any noisy window restarts stalls for many seconds after a node
// returns. Wider, and the climb's doubling fires near capacity too, which
// sits the limit higher.
const calmNoise = 1.5

// maxWindow bounds a window's samples (the buffer is fixed: no allocation
// per sample).
const maxWindow = 1024

// Probe schedule (see adaptive).
const (
	probeEvery    = 16  // windows between probes
	probeFraction = 0.8 // a probe's share of the limit
	probeAverage  = 4   // the baseline averages this many probes (then an EWMA of weight 1/probeAverage)
	probeBudget   = 4   // tail: round trips (× limit samples) to wait for a probe's stragglers
	startFraction = 0.5 // the first probe's share of the initial limit
	probeRejects  = 2   // suspect probes ignored in a row (see endProbe)
)

// Probe phases.
const (
	probeIdle    = iota
	probeRunning // the limit is lowered
	probeTail    // the limit is back; the probe's last requests finish
)

// prober is one baseline probe in progress.
type prober struct {
	phase  int
	limit  int // the probe's limit; its requests carry inflight ≤ limit
	skip   int // samples still to ignore before counting (the start-up probe)
	want   int // samples the probe measures
	budget int // tail: other samples left before giving up on stragglers
	armAt  int // start-up: the probe begins at the first sample with inflight ≥ armAt; 0 once begun
}

func newAdaptive(cfg LimiterConfig, step func(*LimiterConfig, float64, windowStats) float64) *adaptive {
	a := &adaptive{cfg: cfg, est: float64(cfg.Limit), step: step}
	// The start-up probe waits until demand reaches the limit: a baseline
	// measured on a quiet machine is lower than what the loaded one shows
	// with no queue at all (the lab's nodes, gateway and load generator
	// share the CPUs), and would read as a standing queue. Up to Limit
	// requests were admitted before it begins, and as many as the probe
	// admits may queue behind them: it skips those.
	lim := max(int(float64(cfg.Limit)*startFraction+0.5), 1)
	a.probe = prober{phase: probeRunning, limit: lim, skip: cfg.Limit + lim, want: min(2*a.windowSize(), maxWindow), armAt: cfg.Limit - 1}
	a.limit.Store(int64(cfg.Limit))
	return a
}

// windowSize is max(WindowSamples, 2×limit), at most maxWindow.
func (a *adaptive) windowSize() int {
	return min(max(a.cfg.WindowSamples, int(2*a.est+0.5)), maxWindow)
}

func (a *adaptive) Limit() int { return int(a.limit.Load()) }

func (a *adaptive) OnSample(rtt time.Duration, inflight int, dropped bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &a.cfg
	if c.TimeoutMs > 0 && rtt > time.Duration(c.TimeoutMs)*time.Millisecond {
		dropped = true
	}
	if a.probe.phase != probeIdle && (a.probeSample(rtt, inflight, dropped) || a.base == 0) {
		// A probe's sample, or any before there is a baseline to judge by.
		return
	}
	// Requests not started under a probe fill the windows even while one
	// runs: a node lost meanwhile must not wait for the probe to end.
	a.win.add(rtt, inflight, dropped)
	if a.win.n < a.windowSize() {
		return
	}
	s := a.win.close(c.Quantile, int(a.est+0.5))
	s.base, s.inflight = a.base, a.win.meanInflight
	if s.stat > s.base && a.win.meanRTT > 0 {
		x := a.win.meanInflight / a.win.meanRTT // completions per second (Little)
		s.queue = math.Min((s.stat-s.base)*x, a.win.meanInflight)
	}
	// Calm windows in a row: a window up to calmNoise×QueueTarget is
	// within the estimate's noise and neither counts nor breaks the run.
	s.calm = a.calm
	switch {
	case s.queue <= c.QueueTarget:
		a.calm++
	case s.queue > calmNoise*c.QueueTarget:
		a.calm = 0
	}
	a.est = clampF(a.step(c, a.est, s), c.Min, c.Max)
	if a.probe.phase != probeIdle {
		if a.probe.phase == probeTail {
			a.store()
		}
		return
	}
	a.windows++
	every := probeEvery
	if a.probes < probeAverage {
		every = probeEvery / 4 // the first probes come faster: one is noisy
	}
	// A probe must run below capacity; after a congested window it might
	// not: wait for a calm one. But when no window was calm for two
	// intervals, the baseline itself is suspect (too low: every window
	// reads as a queue, and the limit sinks): probe anyway.
	if a.windows >= every+every/2 || (a.windows >= every && s.queue <= c.QueueTarget) {
		lim := max(int(a.est*probeFraction+0.5), 1)
		a.probe = prober{phase: probeRunning, limit: lim, want: a.windowSize()}
		a.limit.Store(int64(lim))
		return
	}
	a.store()
}

// probeSample feeds a probe. While it runs, the limit is the probe's and
// only requests that started at that concurrency (inflight ≤ its limit)
// count: they found no queue at the backend as long as the probe's limit
// is below its capacity. Once want minus the probe's limit of them have
// finished, about want have started: the limit is restored, and the
// probe's last requests (the slow ones: leaving them out would bias the
// quantile low) are awaited for up to probeBudget round trips. Their
// quantile updates the baseline.
// It reports whether the sample was the probe's (or skipped by it).
func (a *adaptive) probeSample(rtt time.Duration, inflight int, dropped bool) bool {
	p := &a.probe
	if p.armAt > 0 {
		if inflight < p.armAt {
			return true // the start-up probe waits for demand to reach the limit
		}
		p.armAt = 0
		a.limit.Store(int64(p.limit))
	}
	if p.skip > 0 {
		p.skip--
		return true
	}
	if inflight > p.limit {
		if p.phase == probeTail {
			if p.budget--; p.budget <= 0 {
				a.endProbe()
			}
		}
		return false // started before the probe, or after it
	}
	a.pwin.add(rtt, inflight, dropped)
	if p.phase == probeRunning && a.pwin.n >= p.want-p.limit {
		p.phase, p.budget = probeTail, probeBudget*max(int(a.est+0.5), p.limit)
		a.store()
	}
	if a.pwin.n >= p.want {
		a.endProbe()
	}
	return true
}

// endProbe turns the probe's samples into the baseline: the first probe
// sets it, the next ones are averaged in (a running mean of probeAverage,
// then an EWMA of weight 1/probeAverage).
func (a *adaptive) endProbe() {
	s := a.pwin.close(a.cfg.Quantile, a.probe.limit)
	a.probe, a.windows = prober{}, 0
	// A probe that reads as a queue against an established baseline may
	// have run above capacity (a node died during it): ignore up to
	// probeRejects in a row; more in a row mean the backend got slower.
	suspect := false
	if a.probes >= probeAverage && s.stat > a.base && a.pwin.meanRTT > 0 {
		x := a.pwin.meanInflight / a.pwin.meanRTT
		suspect = (s.stat-a.base)*x > 2*a.cfg.QueueTarget
	}
	switch {
	case s.n == 0 || math.IsInf(s.stat, 1):
	case suspect && a.rejects < probeRejects:
		a.rejects++
	default:
		a.rejects = 0
		a.probes++
		a.base += (s.stat - a.base) / float64(min(a.probes, probeAverage))
	}
	if a.base == 0 {
		// Every sample dropped before any baseline: probe again.
		lim := max(int(a.est*startFraction+0.5), 1)
		a.probe = prober{phase: probeRunning, limit: lim, want: a.windowSize()}
		a.limit.Store(int64(lim))
		return
	}
	a.store()
}

func (a *adaptive) store() { a.limit.Store(int64(a.est + 0.5)) }

// estimate returns the limit outside probes and whether a probe lowers
// the limit now.
func (a *adaptive) estimate() (float64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.est, a.probe.phase == probeRunning
}

// window gathers the samples of one measurement window.
type window struct {
	rtts         [maxWindow]float64 // seconds; dropped samples are +Inf
	n, drops     int
	ok           int
	sum          float64 // seconds, over samples not dropped
	sumInflight  float64
	maxInflight  int
	meanRTT      float64 // of the last closed window
	meanInflight float64 // of the last closed window
}

// add records a sample (none beyond maxWindow).
func (w *window) add(rtt time.Duration, inflight int, dropped bool) {
	if w.n >= maxWindow {
		return
	}
	v := rtt.Seconds()
	if dropped {
		w.drops++
		v = math.Inf(1)
	} else {
		w.sum += v
		w.ok++
	}
	w.rtts[w.n] = v
	w.n++
	w.sumInflight += float64(inflight)
	w.maxInflight = max(w.maxInflight, inflight)
}

// close summarises and resets the window: the q quantile of its samples;
// lim is the limit it ran under.
func (w *window) close(q float64, lim int) windowStats {
	s := windowStats{drops: w.drops, n: w.n, used: w.maxInflight >= lim-1}
	xs := w.rtts[:w.n]
	slices.Sort(xs)
	if w.n > 0 {
		s.stat = xs[min(int(q*float64(w.n)), w.n-1)]
	}
	w.meanRTT, w.meanInflight = 0, 0
	if w.ok > 0 {
		w.meanRTT = w.sum / float64(w.ok)
	}
	if w.n > 0 {
		w.meanInflight = w.sumInflight / float64(w.n)
	}
	w.n, w.drops, w.ok, w.sum, w.sumInflight, w.maxInflight = 0, 0, 0, 0, 0, 0
	return s
}

func clampF(v float64, lo, hi int) float64 {
	return math.Max(float64(lo), math.Min(float64(hi), v))
}

// estimator is implemented by the adaptive limiters (for tests and stats).
type estimator interface {
	estimate() (est float64, probing bool)
}
