package admit

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// adaptive is the machinery the Gradient and AIMD limiters share. It
// measures, in round trips, how many requests wait in the backend's
// queues, and states every margin in the noise it measured: nothing in it
// is sized for a workload (no time, rate or sample count). step is the
// algorithm that turns a measurement into a limit.
//
// # The queue estimate
//
// A queue at the backend adds about the same wait W to every request that
// passes it, so the mean of the fastest half of a round trip's requests
// (Trim) shifts by W like any quantile, but averages many order statistics
// (about twice as precise as the p25 for lognormal service times) and is
// immune to the tail. Little's law turns the wait into requests: the
// backend completes X requests per second, so
//
//	queue ≈ (stat − base) × X
//
// where stat is that mean of the latency signal (the time to first token
// for a stream, whose length is not congestion; the RTT otherwise) and
// base the same with no queue. The backend's capacity is then
// inflight − queue, in requests, whatever its service time, tail or slot
// count.
//
// # Round trips are cohorts of tickets
//
// The limiter numbers the requests it admits (Ticket) and judges them by
// admission, not by completion: a round trip is a cohort of as many
// consecutive tickets as the limit (in one round trip as many requests
// start as are in flight), judged once completeShare of them are back.
// Judging by completion favours the fast: right after the limit rises,
// the requests that finish first are the short ones, and a window of
// completions reads fast, or after a cut, slow. A cohort's missing
// requests are its slowest, so its fastest half is known before they are
// back.
//
// # Windows and noise
//
// A measurement window pools cohorts until it is conclusive: it shows a
// queue well above the target, or its own standard error (from the
// winsorized variance of its samples) is windowPrecision of the
// concurrency (at least one request), or it spans maxWindowRTs round
// trips: a sequential test, so that small, slow or heavy-tailed backends
// get longer windows and large, fast ones a single round trip. The
// queue estimate's error has two parts: the window's own, independent from
// one window to the next, and the baseline's, common to all windows until
// the baseline changes. The limiter keeps a smoothed variance of the
// first, noise; its margins are multiples of √(noise + baseline's): the
// queue it keeps at the backend (the target), what counts as a queue at
// all, how far below capacity a probe goes.
//
// # The baseline
//
// The baseline cannot be read off the windows: a limiter that keeps a few
// requests queued never sees a window without queue, and an estimator fed
// by its windows absorbs that queue (the limit then creeps up), while the
// lowest window is biased low by the noise (every window then reads as a
// queue and the limit sinks). Four sources keep it true:
//
//   - Start-up: the first tickets were admitted as the limit filled, so
//     those up to startShare of the initial limit found free slots
//     whatever the capacity (as long as the initial limit is within
//     1/startShare of it). Their statistic is the first baseline, and
//     each next quarter of the start-up cohort joins it unless it reads
//     significantly higher (below the capacity, none does); the cohort's
//     upper half past them gives the first queue estimate, and the limit
//     moves to the capacity at once.
//   - Probes (BBR's ProbeRTT): the limit drops below the estimated
//     capacity by a noise margin for one cohort; its requests found no
//     queue. The result is merged by inverse variance. Probes come every
//     few round trips while the baseline is young and back off (up to
//     probeMaxEvery round trips) while they keep confirming it.
//   - The slope check: a cut predicts how far the latency must fall (the
//     removed requests' wait, (inflight before − after) / X). A window
//     after the cut that fell far less shows a slower backend, not a queue
//     (a slowdown lengthens every request; a queue lengthens them by the
//     number in front): its statistic becomes the baseline and the limit
//     returns to where it was. So a backend that gets 3× slower keeps its
//     limit, which is the same number of slots.
//   - A window significantly below the baseline shows a faster backend: a
//     queue cannot make requests faster. Its statistic becomes the
//     baseline.
//
// # Refusals
//
// A dropped request that failed faster than the baseline was refused
// (429 from a full node): the backend was full at its concurrency, so the
// limit gets a ceiling one below it at once. Without refusals the ceiling
// rises again, faster and faster, to find capacity that came back. A
// window with more than dropShare drops (time-outs, errors) is congested
// whatever its latency.
type adaptive struct {
	limit   atomic.Int64             // the effective limit, read without mu
	safe    atomic.Int64             // the confirmed concurrency after refusals (see Safe); 0: none
	tickets atomic.Uint64            // tickets issued
	grants  *[grantRing]atomic.Int64 // grant times (UnixNano) by ticket mod grantRing
	now     func() time.Time         // fixed (tests set a virtual clock before use)

	mu      sync.Mutex
	cfg     LimiterConfig // guarded by mu
	step    stepFunc      // fixed
	est     float64       // guarded by mu; the limit outside probes
	started bool          // guarded by mu; the start-up cohort was judged
	ring    cohortRing    // guarded by mu; cohorts awaiting their requests
	win     window        // guarded by mu; the measurement window
	base    float64       // guarded by mu; the baseline statistic, seconds; 0 until known
	baseVar float64       // guarded by mu; its variance, s²
	noise   float64       // guarded by mu; smoothed variance of a window's own queue error, requests²
	x       float64       // guarded by mu; throughput, requests/s
	xCount  int           // guarded by mu; samples since xAt
	xAt     time.Time     // guarded by mu
	capEst  float64       // guarded by mu; the capacity estimate, requests (Gradient); 0 until observed
	capVar  float64       // guarded by mu; its variance
	climb   int           // guarded by mu; windows climbing in a row
	short   float64       // guarded by mu; CUSUM of the queue's shortfall below the target
	upOK    bool          // guarded by mu; a probe above the limit found room: the estimate may climb
	wantUp  bool          // guarded by mu; the shortfall asks a probe above the limit whether there is room
	ceil    float64       // guarded by mu; the limit's ceiling after a refusal; 0: none
	ceilAge int           // guarded by mu; windows since the ceiling was set or a refusal renewed it
	cut     cutCheck      // guarded by mu; the slope check of the last cut
	probe   prober        // guarded by mu
	since   float64       // guarded by mu; round trips since the last probe
	every   float64       // guarded by mu; round trips between probes now
	suspect int           // guarded by mu; probes in a row that read above the baseline
	urgent  bool          // guarded by mu; a deep probe is due (see rebase)
	sinceUp float64       // guarded by mu; round trips since the last probe above the limit
	last    windowStats   // guarded by mu; the last conclusive window
	restore float64       // guarded by mu; the limit to return to if it finds a slower baseline
	cutEst  float64       // guarded by mu; recent cohorts' cut (the slowest latency kept), seconds
	pool    basePool      // guarded by mu; the latest probes' samples
	scratch [2]window     // guarded by mu; windows for one-off statistics
	swEst   float64       // guarded by mu; recent windows' winsorized deviation, seconds
	lastAt  time.Time     // guarded by mu; the last sample's arrival
	voidTo  uint64        // guarded by mu; cohorts with tickets below it saw a stall: not judged
}

// stepFunc returns the limit after a conclusive window in steady state.
type stepFunc func(a *adaptive, s *windowStats) float64

// windowStats summarises a conclusive window for a step.
type windowStats struct {
	n        int     // measured samples
	drops    int     // dropped samples
	inflight float64 // mean in flight at the grant of its requests
	stat     float64 // the fastest share's mean latency, seconds
	se       float64 // its standard error, seconds
	x        float64 // throughput, requests/s
	queue    float64 // estimated requests waiting at the backend (may be < 0: noise)
	queueSE  float64 // the queue estimate's standard error, requests: √(winSE² + baseSE²)
	winSE    float64 // the part from this window's own noise (independent between windows)
	baseSE   float64 // the part from the baseline's (common to every window until it changes)
	target   float64 // the queue to keep at the backend, requests
	used     bool    // some request saw the limit full
	rts      int     // round trips pooled
	cut      float64 // the slowest latency the statistic keeps, seconds
	sw       float64 // the samples' winsorized standard deviation, seconds
	div      float64 // se = sw / div
}

// congested reports whether the queue is significantly above the target.
func (s *windowStats) congested() bool {
	return s.queue > s.target+congestionZ*s.queueSE
}

// visible reports whether the window shows a queue at all.
func (s *windowStats) visible() bool { return s.queue > visibleZ*s.queueSE }

// Dimensionless constants of the estimator. None is a time, a rate or a
// sample count sized for a workload.
const (
	// maxCohort bounds a cohort's tickets (buffers are fixed: no
	// allocation per sample); a higher limit spans several cohorts a
	// round trip.
	maxCohort = 512
	// cohortShare: a cohort's tickets as a share of the limit (a round
	// trip's worth is the limit).
	cohortShare = 0.5
	// numCohorts: cohorts awaiting their requests at once.
	numCohorts = 16
	// stampEvery: one ticket in stampEvery has its grant time noted;
	// grantRing: the stamps kept (the tickets of the ring's cohorts).
	stampEvery = 8
	grantRing  = numCohorts * maxCohort / stampEvery
	// cutMargin: a cohort is judged once its pending requests have been
	// out longer than cutMargin × the recent cut (so they are slower than
	// every request its statistic keeps).
	cutMargin = 1.25
	// minWindow: the fewest samples a window judges by: a trimmed mean of
	// fewer is biased (high, for a right-skewed service time) by several
	// per cent, and noisy, whatever the workload.
	minWindow = 32
	// maxBase bounds the probe samples pooled into the baseline;
	// poolProbes: the latest probes pooled.
	maxBase    = 2048
	poolProbes = 6
	// maxWindow bounds a window's samples.
	maxWindow = 2048
	// windowPrecision: a window is precise enough when its own queue
	// error is this share of the concurrency (or one request).
	windowPrecision = 0.04
	// maxWindowRTs: the longest window, in round trips.
	maxWindowRTs = 8
	// targetZ: the target queue in standard errors of the queue estimate:
	// enough that the queue stays visible (see visibleZ), so that every
	// window measures the capacity.
	targetZ = 2.0
	// visibleZ: a queue estimate more than this many standard errors
	// above 0 shows a queue.
	visibleZ = 1.0
	// congestionZ: a queue more than this many standard errors above the
	// target is congestion.
	congestionZ = 2.0
	// noiseWeight: the EWMA weight of a window in noise.
	noiseWeight = 1.0 / 8
	// dropShare: a window with more dropped samples than this share is
	// congested whatever its latency.
	dropShare = 0.05
	// slopeShare: a window after a cut whose latency fell by less than this
	// share of what the removed queue predicts shows a slower backend.
	slopeShare = 0.5
	// Probe schedule, in round trips: the first come every probeMinEvery,
	// the interval doubles while probes confirm the baseline (up to
	// probeMaxEvery) and resets when one moves it.
	probeMinEvery = 8
	probeMaxEvery = 64
	// probeRejects: probes in a row that read above the baseline before one
	// is believed (the backend got slower; before that, the probe may have
	// run above a capacity that just fell).
	probeRejects = 2
	// probeForget grows the baseline's variance before a probe is merged
	// in, so that it remembers about 1/(probeForget−1) probes.
	probeForget = 1.1
	// probeUpEvery: round trips between probes above the limit (while
	// demand fills it and nothing was refused).
	probeUpEvery = 32
	// urgentShare: the depth of a probe after a cut that did not lower
	// the latency as a queue would, as a share of the limit.
	urgentShare = 0.75
	// upShare: a probe above the limit adds this share of it (at least
	// two requests and two standard errors of the queue estimate).
	upShare = 0.1
	// startClimb: a start below capacity climbs as if startClimb windows
	// had already: its first step doubles the limit.
	startClimb = 3
	// startShare: the start-up cohort's tickets up to this share of the
	// initial limit give the first baseline.
	startShare = 0.25
	// stallGap: a gap between two samples longer than this many mean
	// intervals between completions (1/X) is a stall of the gateway
	// itself (a GC pause, a starved CPU; for Poisson completions its odds
	// are e^−stallGap): the requests in flight through it measured the
	// stall, not the backend.
	stallGap = 12
	// minRate: the fewest completions a throughput update counts (its
	// relative error is about 1/√minRate).
	minRate = minWindow / 2
)

// Cohort kinds.
const (
	cohortRound = iota // a round trip at the limit
	cohortProbe        // a probe's requests
	cohortStart        // the start-up cohort
	cohortUp           // a probe above the limit
)

// cohort gathers the samples of consecutive tickets [from, to).
type cohort struct {
	from, to uint64
	kind     int
	got      int // samples back, measured or not
	n        int // measured samples
	drops    int
	sumInfl  float64
	maxInfl  int
	lat      [maxCohort]float64 // by ticket offset; NaN until back, unmeasured, +Inf when dropped
	infl     [maxCohort]int32   // by ticket offset: in flight at its grant
}

func (c *cohort) reset(from, to uint64, kind int) {
	c.from, c.to, c.kind = from, to, kind
	c.got, c.n, c.drops, c.sumInfl, c.maxInfl = 0, 0, 0, 0, 0
	for i := range c.size() {
		c.lat[i] = math.NaN()
	}
}

func (c *cohort) size() int { return int(c.to - c.from) }

// unmeasured marks a ticket that came back without a measurement.
const unmeasured = -1.0

// cut returns the slowest latency among the cohort's fastest keep share
// (counting its tickets not back as slower than all), 0 when fewer than
// that are back; buf is scratch.
func (c *cohort) cut(keep float64, buf []float64) float64 {
	n := 0
	for i := range c.size() {
		if v := c.lat[i]; !math.IsNaN(v) && v != unmeasured {
			buf[n] = v
			n++
		}
	}
	k := int(keep*float64(c.size()) + 0.5)
	if k < 1 || n < k {
		return 0
	}
	slices.Sort(buf[:n])
	if math.IsInf(buf[k-1], 1) {
		return 0
	}
	return buf[k-1]
}

// youngestPending returns the offset of the cohort's last ticket not back,
// or −1.
func (c *cohort) youngestPending() int {
	for i := c.size() - 1; i >= 0; i-- {
		if math.IsNaN(c.lat[i]) {
			return i
		}
	}
	return -1
}

// cohortRing is a FIFO of cohorts in ticket order.
type cohortRing struct {
	c           [numCohorts]cohort
	head, count int
	frontier    uint64 // the end of the newest cohort ever pushed: the next one starts there
}

func (r *cohortRing) oldest() *cohort { return &r.c[r.head] }
func (r *cohortRing) newest() *cohort { return &r.c[(r.head+r.count-1)%numCohorts] }
func (r *cohortRing) pop()            { r.head, r.count = (r.head+1)%numCohorts, r.count-1 }
func (r *cohortRing) popNewest() {
	r.frontier = r.newest().from
	r.count--
}

// truncateNewest ends the newest cohort at ticket t.
func (r *cohortRing) truncateNewest(t uint64) {
	r.newest().to = t
	r.frontier = t
}

// push appends a cohort; the ring must not be full.
func (r *cohortRing) push(from, to uint64, kind int) *cohort {
	c := &r.c[(r.head+r.count)%numCohorts]
	r.count++
	c.reset(from, to, kind)
	r.frontier = to
	return c
}

// find returns the cohort holding ticket t, or nil.
func (r *cohortRing) find(t uint64) *cohort {
	for i := range r.count {
		c := &r.c[(r.head+i)%numCohorts]
		if t >= c.from && t < c.to {
			return c
		}
	}
	return nil
}

// Probe phases.
const (
	probeIdle    = iota
	probeRunning // the limit is lowered
	probeWaiting // the limit is back; the probe's cohort is awaited
)

// prober is one baseline probe in progress.
type prober struct {
	phase  int
	limit  int    // the probe's limit
	from   uint64 // its first ticket
	want   int    // its tickets
	urgent bool   // a deep probe after a cut that did not lower the latency as a queue would
	up     bool   // a probe above the limit
}

// cutCheck remembers a significant cut until a window after it shows
// whether the latency fell as a queue would.
type cutCheck struct {
	armed    bool
	from     float64 // the limit before the cut
	inflight float64 // the cut window's mean in flight
	stat     float64 // its statistic
	x        float64 // its throughput
	se       float64 // its statistic's standard error
}

func newAdaptive(cfg LimiterConfig, step stepFunc) *adaptive {
	a := &adaptive{cfg: cfg, est: float64(cfg.Limit), step: step, every: probeMinEvery, now: time.Now, grants: new([grantRing]atomic.Int64)}
	a.ring.push(0, uint64(min(cfg.Limit, maxCohort)), cohortStart)
	a.limit.Store(int64(cfg.Limit))
	return a
}

func (a *adaptive) Limit() int { return int(a.limit.Load()) }

// Safe returns the concurrency the backend was last seen to take without
// refusing, while the limit explores above it after refusals (0: no
// refusal, no restriction). See SafeLimiter.
func (a *adaptive) Safe() int { return int(a.safe.Load()) }

// Ticket numbers an admitted request, and notes when every stampEvery-th
// was admitted (reading the clock for every request would cost more than
// the rest of admission).
func (a *adaptive) Ticket() uint64 {
	t := a.tickets.Add(1) - 1
	if t%stampEvery == 0 {
		a.grants[(t/stampEvery)%grantRing].Store(a.now().UnixNano())
	}
	return t
}

// OnLatency reports a request's latency signal before it finishes (a
// stream's first token): its cohort can be judged without waiting for the
// stream's end. The release's Sample then only counts the request out.
func (a *adaptive) OnLatency(ticket uint64, inflight int, latency time.Duration) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stalled(now)
	a.record(&Sample{RTT: latency, Latency: latency, Inflight: inflight, Ticket: ticket}, latency.Seconds(), true)
	a.judgeReady(now)
}

// ready reports whether the oldest cohort can be judged: every ticket
// back, or those not back out longer than cutMargin × the recent cut, so
// that they are slower than every request its statistic keeps (a
// request's latency is at least its time out). A pending ticket's grant
// time is bounded by the next stamped ticket's.
func (a *adaptive) ready(co *cohort, now time.Time) bool {
	if co.got >= co.size() {
		return true
	}
	if float64(co.got) < a.cfg.keep()*float64(co.size()) {
		return false
	}
	cut := a.cutEst
	if cut == 0 {
		// No cut yet (the first cohort): its own, from what is back.
		cut = co.cut(a.cfg.keep(), a.scratch[1].sorted[:])
		if cut == 0 {
			return false
		}
	}
	t := co.from + uint64(co.youngestPending())
	stamp := (t + stampEvery - 1) / stampEvery
	if stamp*stampEvery >= a.tickets.Load() {
		return false // not issued yet
	}
	age := float64(now.UnixNano()-a.grants[stamp%grantRing].Load()) / 1e9
	return age > cutMargin*cut
}

// judgeReady judges the cohorts that are ready, oldest first.
func (a *adaptive) judgeReady(now time.Time) {
	for a.ring.count > 0 && a.ready(a.ring.oldest(), now) {
		a.judge(a.ring.oldest())
		a.ring.pop()
	}
}

func (a *adaptive) OnSample(s Sample) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &a.cfg
	if a.xAt.IsZero() {
		a.xAt = now
	}
	a.stalled(now)
	a.xCount++
	measured := s.RTT > 0
	if measured && c.TimeoutMs > 0 && s.RTT > time.Duration(c.TimeoutMs)*time.Millisecond {
		s.Dropped = true
	}
	lat := s.signal().Seconds()
	if measured && s.Dropped && a.base > 0 && lat < a.base && s.Inflight > 1 {
		a.refused(s.Inflight)
	}
	if p := &a.probe; p.phase == probeRunning && a.tickets.Load() >= p.from+uint64(p.want) {
		// The probe's tickets are out: restore the limit.
		p.phase = probeWaiting
		a.store()
	}
	a.record(&s, lat, measured)
	a.judgeReady(now)
	if debugTick != nil {
		debugTick(a)
	}
}

// stalled notes a sample's arrival; after a gap of more than stallGap
// mean intervals between completions, the requests in flight (their
// cohorts, the window, a probe) are not judged.
func (a *adaptive) stalled(now time.Time) {
	last := a.lastAt
	a.lastAt = now
	if last.IsZero() || a.x == 0 || now.Sub(last).Seconds()*a.x <= stallGap {
		return
	}
	if debugStall != nil {
		debugStall(a, now.Sub(last).Seconds())
	}
	a.voidTo = a.tickets.Load()
	a.win.reset()
	a.cut.armed = false
	// Throughput is measured afresh (until then no stall is told).
	a.x, a.xCount, a.xAt = 0, 0, now
	if a.probe.phase != probeIdle {
		a.probe = prober{}
		a.store()
	}
}

// record files a sample in its cohort, creating round-trip cohorts up to
// its ticket.
func (a *adaptive) record(s *Sample, lat float64, measured bool) {
	for s.Ticket >= a.ring.frontier {
		from := a.ring.frontier
		if a.ring.count == numCohorts {
			// Full: judge the oldest with what it has.
			if o := a.ring.oldest(); o.got > 0 {
				a.judge(o)
			}
			a.ring.pop()
		}
		size := uint64(min(max(int(a.est*cohortShare+0.5), 1), maxCohort))
		if s.Ticket >= from+uint64(numCohorts)*size {
			from = s.Ticket // far ahead (lost samples): start afresh
		}
		a.ring.push(from, from+size, cohortRound)
	}
	co := a.ring.find(s.Ticket)
	if co == nil {
		return // its cohort was judged already
	}
	i := s.Ticket - co.from
	if !math.IsNaN(co.lat[i]) {
		return // its latency came early (OnLatency)
	}
	co.got++
	if !measured {
		co.lat[i] = unmeasured
		return
	}
	if s.Dropped {
		co.drops++
		lat = math.Inf(1)
	}
	co.lat[i], co.infl[i] = lat, int32(s.Inflight)
	co.n++
	co.sumInfl += float64(s.Inflight)
	co.maxInfl = max(co.maxInfl, s.Inflight)
}

// refused handles a request refused at concurrency inflight.
func (a *adaptive) refused(inflight int) {
	ceil := math.Max(float64(inflight-1), float64(a.cfg.Min))
	if a.ceil == 0 || ceil < a.ceil {
		a.ceil = ceil
		a.safe.Store(int64(ceil + 0.5))
		a.cut.armed = false
		if a.probe.phase != probeRunning {
			a.store()
		}
	}
	a.ceilAge = 0
}

// judge takes a complete (or evicted) cohort.
func (a *adaptive) judge(co *cohort) {
	if co.from < a.voidTo && co.kind != cohortStart {
		return // it saw a stall
	}
	switch co.kind {
	case cohortStart:
		a.startUp(co)
	case cohortProbe:
		a.endProbe(co)
	case cohortUp:
		a.endProbeUp(co)
	default:
		a.win.add(co)
		a.win.rts++
		a.closeWindow(int(a.est + 0.5))
	}
}

// fixSE floors s's standard error with the winsorized deviation pooled
// over recent windows: one window's own deviation is noisy, and it is
// small exactly when the window's statistic is low by chance, which would
// make a chance-low baseline look precise.
func (a *adaptive) fixSE(s *windowStats) {
	if s.sw <= 0 || s.div <= 0 {
		return
	}
	w := math.Min(1, float64(s.n)/float64(maxCohort/4))
	if a.swEst == 0 {
		a.swEst = s.sw
	} else {
		a.swEst += 0.25 * w * (s.sw - a.swEst)
	}
	s.se = math.Max(s.se, a.swEst/s.div)
}

// noteCut follows the cut of the windows (an EWMA).
func (a *adaptive) noteCut(cut float64) {
	if cut <= 0 || math.IsInf(cut, 1) {
		return
	}
	if a.cutEst == 0 {
		a.cutEst = cut
	} else {
		a.cutEst += 0.25 * (cut - a.cutEst)
	}
}

// throughput updates and returns X, the completions per second since the
// last update (an EWMA over updates of at least minRate completions).
func (a *adaptive) throughput() float64 {
	now := a.now()
	if d := now.Sub(a.xAt).Seconds(); d > 0 && (a.xCount >= minRate || a.x == 0 && a.xCount > 0) {
		x := float64(a.xCount) / d
		if a.x == 0 {
			a.x = x
		} else {
			a.x += 0.5 * (x - a.x)
		}
		a.xCount, a.xAt = 0, now
	}
	return a.x
}

// closeWindow judges the window when it is conclusive (see adaptive) and
// moves the limit.
func (a *adaptive) closeWindow(lim int) {
	c := &a.cfg
	s := a.win.stats(c.keep(), lim)
	a.noteCut(s.cut)
	a.fixSE(&s)
	s.x = a.throughput()
	a.estimate(&s)
	w := &a.win
	dropped := float64(s.drops) > dropShare*float64(s.n)
	precise := s.winSE <= math.Max(1, windowPrecision*s.inflight) || s.congested() || dropped
	enough := s.n >= minWindow
	if a.short > climbAfter && s.used {
		// Climbing: the question is only whether a queue shows, and a
		// limit doubling past the capacity shows a large one; a round
		// trip's requests tell.
		precise, enough = true, s.n >= minWindow/4
	}
	if (!precise || !enough) && w.rts < maxWindowRTs && w.n < maxWindow-maxCohort {
		return
	}
	a.since += float64(w.rts)
	a.sinceUp += float64(w.rts)
	w.reset()
	if s.n == 0 {
		return
	}
	a.noise += noiseWeight * (s.winSE*s.winSE - a.noise)
	if a.ceil > 0 {
		// No refusal for a while: lift the ceiling, faster and faster, to
		// find capacity that came back.
		if a.ceilAge++; a.ceilAge >= 2 {
			// The ceiling held a window without refusal: it is safe.
			a.safe.Store(int64(a.ceil + 0.5))
			a.ceil += float64(int(1) << min(a.ceilAge-2, maxClimbShift))
		}
		if a.ceil >= a.est {
			a.ceil = 0
			a.safe.Store(0)
		}
	}
	if dropped {
		a.est = clampF(a.est*c.Backoff, c.Min, c.Max)
		a.capEst = math.Min(a.capEst, a.est)
		a.cut.armed = false
	} else {
		a.rebase(&s)
		before := a.est
		a.est = clampF(a.step(a, &s), c.Min, c.Max)
		a.last = s
		if debugWindow != nil {
			debugWindow(a, &s, before)
		}
		if s.queue > 0 && before-a.est > math.Max(1, 2*s.queueSE) {
			// Check the cut on a later window; a chain of cuts keeps the
			// first limit to return to.
			from := before
			if a.cut.armed {
				from = math.Max(from, a.cut.from)
			}
			a.cut = cutCheck{armed: true, from: from, inflight: s.inflight, stat: s.stat, x: s.x, se: s.se}
		}
	}
	if a.probe.phase == probeIdle && (a.urgent || !s.congested()) {
		switch {
		case a.urgent || a.since >= a.every && s.used:
			// Only while demand fills the limit: a probe under low demand
			// would measure a quieter machine than the loaded one (the
			// lab's processes share the CPUs) and make demand wait.
			a.startProbe(&s, false)
			return
		case (a.wantUp || a.sinceUp >= probeUpEvery) && s.used && a.ceil == 0:
			a.startProbe(&s, true)
			return
		}
	}
	if a.probe.phase != probeRunning {
		a.store()
	}
}

// estimate fills in the queue estimate, its errors and the target.
func (a *adaptive) estimate(s *windowStats) {
	if s.n == 0 || s.x == 0 || math.IsInf(s.stat, 1) {
		return
	}
	s.queue = math.Min((s.stat-a.base)*s.x, s.inflight)
	s.winSE = s.x * s.se
	s.baseSE = s.x * math.Sqrt(a.baseVar)
	s.queueSE = math.Hypot(s.winSE, s.baseSE)
	if a.noise == 0 {
		a.noise = s.winSE * s.winSE
	}
	s.target = a.target(s)
}

// rebase applies the slope check of the last cut and the faster-backend
// rule; it may move the baseline (and the limit back).
func (a *adaptive) rebase(s *windowStats) {
	if ck := &a.cut; ck.armed {
		// The check needs a window whose requests mostly started after
		// the cut: its mean in flight is at least halfway down.
		drop := ck.inflight - s.inflight
		if want := ck.inflight - a.est; drop >= 0.5*want && want > 0 {
			ck.armed = false
			predicted := drop / ck.x
			fell := ck.stat - s.stat
			noise := math.Sqrt(ck.se*ck.se + s.se*s.se)
			if predicted > 2*noise && fell < slopeShare*predicted {
				// Not a queue, or not only: the backend may have got
				// slower. A deep probe decides; if it finds a slower
				// baseline, the limit returns to where it was.
				a.urgent, a.restore = true, ck.from
			}
		}
	}
	if z := math.Sqrt(s.se*s.se + a.baseVar); s.stat < a.base-3*z {
		// Faster than the no-queue latency: the backend got faster.
		a.pool.reset()
		a.setBase(s.stat, s.se*s.se)
		s.queue = 0
		a.every, a.since = probeMinEvery, 0
	}
}

func (a *adaptive) setBase(v, variance float64) {
	if debugBase != nil {
		debugBase(a, v, variance)
	}
	a.shiftBase(v)
	a.baseVar = variance
	a.suspect = 0
}

// shiftBase moves the baseline to v and the capacity estimate with it:
// every observation it holds was measured against the old baseline.
func (a *adaptive) shiftBase(v float64) {
	if a.base > 0 && a.capEst > 0 {
		a.capEst = math.Max(a.capEst+(v-a.base)*a.x, 1)
	}
	a.base = v
}

// startUp judges the start-up cohort: its tickets below startShare × the
// initial limit found free slots (as long as the limit is within
// 1/startShare of the capacity); their statistic is the baseline. The
// cohort's upper half gives the first queue estimate, and the limit moves
// to the capacity at once; a cohort without a queue starts the climb.
func (a *adaptive) startUp(co *cohort) {
	if debugStart != nil {
		debugStart(a, co)
	}
	c := &a.cfg
	a.started = true
	size := co.size()
	// The baseline: the first quarter of tickets, then each next quarter
	// as long as it does not read significantly higher (below the
	// capacity, none does, and the baseline gets the whole cohort).
	q := max(1, int(startShare*float64(size)+0.5))
	base := &a.scratch[1]
	base.reset()
	base.addRange(co, 0, q)
	b := base.stats(c.keep(), size)
	a.noteCut(b.cut)
	a.fixSE(&b)
	if b.n == 0 || math.IsInf(b.stat, 1) {
		return // nothing measured: the next windows will see
	}
	hi := q
	if size < minWindow {
		// Too few to tell quarters apart: one group (a limit this small
		// is most likely below the capacity; if not, the next round trip
		// shows the queue).
		base.reset()
		base.addRange(co, 0, size)
		b = base.stats(c.keep(), size)
		a.fixSE(&b)
		hi = size
	}
	for hi < size {
		next := min(hi+q, size)
		g := &a.scratch[0]
		g.reset()
		g.addRange(co, hi, next)
		gs := g.stats(c.keep(), size)
		a.fixSE(&gs)
		if gs.n == 0 || gs.stat > b.stat+2*math.Hypot(gs.se, b.se) {
			break
		}
		base.reset()
		base.addRange(co, 0, next)
		b = base.stats(c.keep(), size)
		a.fixSE(&b)
		hi = next
	}
	a.setBase(b.stat, b.se*b.se)
	a.pool.reset()
	start := *co
	start.to = start.from + uint64(hi)
	a.pool.add(&start)
	if hi >= size {
		// No queue anywhere: below capacity, climb at once, doubling the
		// limit each round trip (TCP's slow start) until a queue shows.
		a.capEst, a.capVar = a.est, b.se*b.se*a.x*a.x
		a.short = 2 * climbAfter
		a.climb = startClimb
		a.upOK = true
		a.store()
		return
	}
	// The queue: the cohort's last half past the baseline's tickets.
	highW := &a.scratch[0]
	highW.reset()
	highW.addRange(co, max(hi, size/2), size)
	s := highW.stats(c.keep(), size)
	a.fixSE(&s)
	s.x = a.throughput()
	s.used = true
	a.estimate(&s)
	a.noise = s.winSE * s.winSE
	a.capVar = s.winSE * s.winSE
	if debugStartQ != nil {
		debugStartQ(a, &s, hi)
	}
	a.capEst = math.Max(s.inflight-s.queue, float64(hi))
	a.est = clampF(a.capEst+a.target(&s), c.Min, c.Max)
	a.store()
}

// startProbe lowers the limit below the estimated capacity by a noise
// margin, for one cohort.
func (a *adaptive) startProbe(s *windowStats, up bool) {
	margin := math.Sqrt(a.noise + s.baseSE*s.baseSE)
	capEst := a.est - s.target
	lo := max(a.cfg.Min, 1)
	lim := max(int(math.Floor(capEst-math.Max(1, 2*margin))), lo)
	switch {
	case a.urgent:
		lim, up = max(int(urgentShare*a.est), lo), false
	case up:
		lim = int(math.Ceil(a.est + math.Max(math.Max(2, 3*math.Sqrt2*s.winSE), upShare*a.est)))
	}
	if up {
		a.sinceUp, a.wantUp = 0, false
	} else {
		a.since = 0
	}
	if (!up && float64(lim) >= a.est) || a.ring.count == numCohorts {
		a.urgent = false
		return
	}
	from := a.tickets.Load()
	// Cut the open round trip at the probe's first ticket.
	if a.ring.count > 0 {
		if nw := a.ring.newest(); nw.from >= from && nw.got == 0 {
			a.ring.popNewest()
		} else if nw.to > from {
			a.ring.truncateNewest(max(from, nw.from))
		}
	}
	from = max(from, a.ring.frontier)
	want := max(lim, 1)
	kind := cohortProbe
	if up {
		// The first round trip ramps up; the rest (at least minWindow
		// tickets) is judged.
		kind, want = cohortUp, lim+max(lim, minWindow)
	}
	a.ring.push(from, from+uint64(min(want, maxCohort)), kind)
	a.probe = prober{phase: probeRunning, limit: lim, from: from, want: min(want, maxCohort), urgent: a.urgent, up: up}
	a.urgent = false
	a.limit.Store(int64(lim))
	if debugProbeStart != nil {
		debugProbeStart(a, lim, up)
	}
}

// endProbe merges the probe's statistic into the baseline by inverse
// variance (the old estimate's variance grown, so that it is forgotten
// over a few probes).
func (a *adaptive) endProbe(co *cohort) {
	urgent, restore := a.probe.urgent, a.restore
	a.probe, a.restore = prober{}, 0
	a.since = 0
	w := &a.scratch[0]
	w.reset()
	w.addRange(co, 0, co.size())
	w.rts = 1
	s := w.stats(a.cfg.keep(), 0)
	a.fixSE(&s)
	defer a.store()
	if debugProbe != nil {
		debugProbe(a, s.n, s.stat, s.se)
	}
	if debugProbeCohort != nil {
		debugProbeCohort(a, co, w)
	}
	if s.n == 0 || math.IsInf(s.stat, 1) {
		return
	}
	if urgent {
		// The cut before it did not lower the latency as a queue would:
		// whatever this probe finds (a slower backend, or noise), the
		// capacity did not shrink; the limit returns.
		a.est = math.Max(a.est, restore)
		a.capEst = math.Max(a.capEst, a.est-a.target(&s))
		a.climb, a.short = 0, 0
	}
	v := math.Max(s.se*s.se, 1e-18)
	z := math.Sqrt(v + a.baseVar)
	switch {
	case a.pool.n == 0:
		a.pool.add(co)
		a.poolBase()
	case urgent && s.stat > a.base+congestionZ*z:
		// A slower backend: same slots, longer requests.
		a.pool.reset()
		a.pool.add(co)
		a.poolBase()
		a.capEst, a.capVar = a.est-a.target(&s), s.se*s.se*a.x*a.x
		a.every = probeMinEvery
	case s.stat > a.base+congestionZ*z && a.suspect < probeRejects && a.pool.count > 1:
		// Above the baseline: the probe may have run above a capacity
		// that just fell. Believe it only when it repeats.
		a.suspect++
		a.every = probeMinEvery
	case math.Abs(s.stat-a.base) > 3*z:
		// The backend changed: start the pool afresh.
		a.pool.reset()
		a.pool.add(co)
		a.poolBase()
		a.every = probeMinEvery
	default:
		a.pool.add(co)
		a.poolBase()
		a.suspect = 0
		if math.Abs(s.stat-a.base) < z {
			a.every = math.Min(2*a.every, probeMaxEvery)
		} else {
			a.every = probeMinEvery
		}
	}
}

// endProbeUp judges a probe above the limit by the slope of the queue:
// between the last window and the probe's, a queue grows by every request
// added (slope 1) while the backend is full, and not at all while it has
// room. No growth means capacity came back (or the baseline reads low):
// the estimate climbs. Growth confirms the capacity: the probe is one
// more window for the filter.
func (a *adaptive) endProbeUp(co *cohort) {
	ramp := min(a.probe.limit, co.size()/2)
	a.probe = prober{}
	defer a.store()
	// Past its first round trip, which ramps the concurrency up.
	w := &a.scratch[0]
	w.reset()
	w.addRange(co, ramp, co.size())
	w.rts = 1
	s := w.stats(a.cfg.keep(), 0)
	a.fixSE(&s)
	s.x = a.throughput()
	a.estimate(&s)
	l := a.last
	dn := s.inflight - l.inflight
	if debugUp != nil {
		debugUp(a, &s, &l)
	}
	a.short, a.upOK = 0, false
	if s.n < minWindow/2 || l.n == 0 || dn < 1 {
		return // demand did not fill it
	}
	noise := math.Hypot(s.winSE, l.winSE)
	if dn < 2*noise {
		return // too small a step to tell
	}
	if s.queue-l.queue < slopeShare*dn {
		// Room above: climb.
		a.short, a.upOK = 2*climbAfter, true
		a.every = probeMinEvery
		return
	}
	s.used = true
	a.est = clampF(a.step(a, &s), a.cfg.Min, a.cfg.Max)
	a.short = 0
}

// poolBase sets the baseline from the pooled probe samples.
func (a *adaptive) poolBase() {
	w := &a.scratch[0]
	w.reset()
	n := a.pool.samples(w.lat[:])
	w.n = n
	for _, v := range w.lat[:n] {
		if math.IsInf(v, 1) {
			w.drops++
		}
	}
	s := w.stats(a.cfg.keep(), 0)
	a.fixSE(&s)
	if s.n == 0 || math.IsInf(s.stat, 1) {
		return
	}
	a.setBase(s.stat, s.se*s.se)
}

// basePool keeps the samples of the latest poolProbes probes (the
// requests not back when a probe was judged count as slow: +Inf), so that
// the baseline is the statistic of many samples, free of the small-sample
// bias of one probe, and forgets old probes.
type basePool struct {
	lat   [maxBase]float64 // a FIFO: lat[head:head+n] (mod maxBase)
	head  int
	n     int
	sizes [poolProbes]int // samples of each pooled probe, oldest first
	count int             // probes pooled
}

func (p *basePool) reset() { p.head, p.n, p.count = 0, 0, 0 }

func (p *basePool) drop(k int) {
	k = min(k, p.n)
	p.head = (p.head + k) % maxBase
	p.n -= k
}

func (p *basePool) push(v float64) {
	if p.n == maxBase {
		p.drop(1)
	}
	p.lat[(p.head+p.n)%maxBase] = v
	p.n++
}

// add pools a cohort's samples as one probe, forgetting the oldest probe
// beyond poolProbes.
func (p *basePool) add(co *cohort) {
	if p.count == poolProbes {
		p.drop(p.sizes[0])
		copy(p.sizes[:], p.sizes[1:])
		p.count--
	}
	k := 0
	for i := range co.size() {
		switch v := co.lat[i]; {
		case v == unmeasured:
		case math.IsNaN(v):
			p.push(math.Inf(1)) // not back: slower than any kept
			k++
		default:
			p.push(v)
			k++
		}
	}
	p.sizes[p.count] = k
	p.count++
}

// addWindow pools a window's samples as one probe.
func (p *basePool) addWindow(w *window) {
	if p.count == poolProbes {
		p.drop(p.sizes[0])
		copy(p.sizes[:], p.sizes[1:])
		p.count--
	}
	for _, v := range w.lat[:w.n] {
		p.push(v)
	}
	for range w.pending {
		p.push(math.Inf(1))
	}
	p.sizes[p.count] = w.n + w.pending
	p.count++
}

// samples copies the pooled samples into dst.
func (p *basePool) samples(dst []float64) int {
	n := 0
	for i := 0; i < p.n && n < len(dst); i++ {
		dst[n] = p.lat[(p.head+i)%maxBase]
		n++
	}
	return n
}

func (a *adaptive) store() {
	if a.probe.phase == probeRunning {
		return
	}
	l := a.est
	if a.ceil > 0 {
		l = math.Min(l, a.ceil)
	}
	a.limit.Store(int64(math.Max(1, l+0.5)))
}

// estimateLimit returns the limit outside probes and whether a probe
// lowers the limit now.
func (a *adaptive) estimateLimit() (float64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.est, a.probe.phase == probeRunning
}

// window pools the samples of consecutive cohorts.
type window struct {
	lat     [maxWindow]float64 // latency signal, seconds; dropped samples are +Inf
	infl    [maxWindow]int32   // in flight at each sample's grant
	sorted  [maxWindow]float64 // scratch for the statistic
	n       int                // measured samples
	pending int                // tickets not back when their cohort was judged (its slowest)
	drops   int
	maxInfl int
	rts     int
}

// add pools a cohort's samples.
func (w *window) add(co *cohort) { w.addRange(co, 0, co.size()) }

// addRange pools the samples of a cohort's tickets [lo, hi) (offsets);
// those not back yet count as pending (the slowest).
func (w *window) addRange(co *cohort, lo, hi int) {
	for i := lo; i < hi; i++ {
		v := co.lat[i]
		switch {
		case math.IsNaN(v):
			w.pending++
		case v == unmeasured:
		case w.n < maxWindow:
			w.lat[w.n], w.infl[w.n] = v, co.infl[i]
			w.n++
			if math.IsInf(v, 1) {
				w.drops++
			}
		}
	}
	w.maxInfl = max(w.maxInfl, co.maxInfl)
}

// stats summarises the window; lim is the limit it ran under. Its
// concurrency is the mean in flight of the samples its statistic keeps:
// where the concurrency varied (the start-up ramp, a cut), the fastest
// requests are also the ones that started with the fewest in front.
func (w *window) stats(keep float64, lim int) windowStats {
	s := windowStats{n: w.n, drops: w.drops, used: w.maxInfl >= lim, rts: w.rts}
	if w.n == 0 {
		return s
	}
	copy(w.sorted[:w.n], w.lat[:w.n])
	var k int
	s.stat, s.sw, s.div, s.cut, k = trimmedMean(w.sorted[:w.n], w.pending, keep)
	if s.div > 0 {
		s.se = s.sw / s.div
	}
	var sum float64
	taken := 0
	for i := 0; i < w.n && taken < k; i++ {
		if w.lat[i] < s.cut {
			sum += float64(w.infl[i])
			taken++
		}
	}
	for i := 0; i < w.n && taken < k; i++ {
		if w.lat[i] == s.cut {
			sum += float64(w.infl[i])
			taken++
		}
	}
	if taken > 0 {
		s.inflight = sum / float64(taken)
	}
	return s
}

func (w *window) reset() {
	w.n, w.pending, w.drops, w.maxInfl, w.rts = 0, 0, 0, 0, 0
}

// trimmedMean sorts xs and returns the mean of the fastest keep share of
// xs and pending more samples known to be slower than all of xs, the
// samples' winsorized standard deviation sw (the slower samples count at
// the cut) and div: the mean's standard error is sw / div (the influence
// function of a one-sided trimmed mean is min(x, cut)/keep); cut is the
// slowest sample kept, k the samples kept.
func trimmedMean(xs []float64, pending int, keep float64) (mean, sw, div, cut float64, k int) {
	n := len(xs)
	if n == 0 {
		return 0, 0, 0, 0, 0
	}
	slices.Sort(xs)
	total := n + pending
	k = min(max(1, int(keep*float64(total)+0.5)), n)
	cut = xs[k-1]
	if math.IsInf(cut, 1) {
		return math.Inf(1), 0, 0, cut, k
	}
	var sum float64
	for _, x := range xs[:k] {
		sum += x
	}
	mean = sum / float64(k)
	wm := (sum + float64(total-k)*cut) / float64(total)
	var v float64
	for _, x := range xs[:k] {
		v += (x - wm) * (x - wm)
	}
	v += float64(total-k) * (cut - wm) * (cut - wm)
	v /= float64(max(total-1, 1))
	frac := float64(k) / float64(total)
	return mean, math.Sqrt(v), frac * math.Sqrt(float64(total)), cut, k
}

func clampF(v float64, lo, hi int) float64 {
	return math.Max(float64(lo), math.Min(float64(hi), v))
}

// estimator is implemented by the adaptive limiters (for tests and stats).
type estimator interface {
	estimateLimit() (est float64, probing bool)
}

// Test hooks (nil outside tests).
var (
	debugBase        func(a *adaptive, v, variance float64)
	debugProbe       func(a *adaptive, n int, stat, se float64)
	debugWindow      func(a *adaptive, s *windowStats, before float64)
	debugStart       func(a *adaptive, co *cohort)
	debugStartQ      func(a *adaptive, s *windowStats, hi int)
	debugUp          func(a *adaptive, s, last *windowStats)
	debugTick        func(a *adaptive)
	debugProbeCohort func(a *adaptive, co *cohort, w *window)
	debugProbeStart  func(a *adaptive, lim int, up bool)
	debugStall       func(a *adaptive, gap float64)
)
