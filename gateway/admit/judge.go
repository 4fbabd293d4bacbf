package admit

import (
	"math"
	"sync/atomic"
	"time"
)

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
	a.sawStream = true
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
	now := s.End
	if now.IsZero() {
		now = a.now()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &a.cfg
	if a.xAt.IsZero() {
		a.xAt = now
	}
	a.stalled(now)
	a.released++
	if !s.Refused {
		a.done++
		// A call every node refused (429) did not complete: counted,
		// refusals read as completions (one after each call doubled the
		// throughput) and the queue, throughput × wait, with them.
		a.xCount++
	}
	measured := s.RTT > 0
	if measured && c.TimeoutMs > 0 && s.RTT > time.Duration(c.TimeoutMs)*time.Millisecond {
		s.Dropped = true
	}
	lat := s.signal().Seconds()
	// A fast drop is a refusal; alone in flight only when the nodes said
	// so (429): its ceiling is then the minimum — nothing else holds the
	// limit of a gateway that gets a call at a time or none (see record
	// below).
	if measured && s.Dropped && a.base > 0 && lat < a.base && (s.Inflight > 1 || s.Refused) {
		a.refusing = a.refusing || s.Refused
		a.refused(s.Inflight)
	}
	if p := &a.probe; p.phase == probeRunning && a.tickets.Load() >= p.from+uint64(p.want) {
		// The probe's tickets are out: restore the limit.
		p.phase = probeWaiting
		a.store()
	}
	if a.ceil > 0 {
		a.ceilPeak = max(a.ceilPeak, s.Inflight)
	}
	a.liftCeil()
	// A refusal is the ceiling's (above), not a window's: it measures no
	// latency, and as a dropped sample a burst of them (slots cut on
	// nodes that answer 429) made window after window congested, each
	// backing the estimate off a tenth and starting a probe refused as
	// well — to the minimum within two service times, where one request at
	// a time climbs back slowly (traced: 500 ms, σ 0.7, 4×8 slots cut to
	// a quarter behind two gateways: one sat at 1 after the slots came
	// back). Its ticket is counted back, unmeasured.
	a.record(&s, lat, measured && !s.Refused)
	a.judgeReady(now)
	a.checkJump(now)
}

// stalled notes a sample's arrival; after a gap of more than stallGap
// mean intervals between completions, the requests in flight (their
// cohorts, the window, a probe) are not judged.
func (a *adaptive) stalled(now time.Time) {
	last := a.lastAt
	a.lastAt = now
	if last.IsZero() || a.x == 0 || now.Sub(last).Seconds()*a.expectedRate() <= stallGap {
		return
	}
	if debugStall != nil {
		debugStall(a, now.Sub(last).Seconds())
	}
	a.voidWindows()
	a.cut.armed = false
	// Throughput is measured afresh (until then no stall is told).
	a.x, a.xCount, a.xAt = 0, 0, now
	if a.probe.phase != probeIdle {
		// The stall voids the probe's measurement, not its question: an
		// urgent probe (see endProbe) runs again.
		a.urgent = a.urgent || a.probe.urgent
		a.probe = prober{}
		a.store()
	}
}

// voidWindows sets aside what was admitted so far: the cohorts with
// tickets below the next one are not judged (a stall, the start-up's
// jump, a change in the nodes serving the limiter), and the open window
// starts afresh. Guarded by mu.
func (a *adaptive) voidWindows() {
	a.voidTo = max(a.voidTo, a.tickets.Load())
	a.win.reset()
}

// expectedRate returns the completions per second to expect now: the
// throughput measured, scaled down by the limit when the limit is below
// the concurrency it was measured at. A cut (an urgent probe far below
// the last window's concurrency) lowers the completions' rate at once
// while the throughput measured still holds the old one; against that,
// the ordinary gaps of the fewer requests in flight read as stalls, which
// voided each urgent probe after a slowdown ×3 and let the cuts go on
// (traced: 3×64 slots, the limit 202 → 88 → 41 → 18 → 10 → 6, P0 89 %).
func (a *adaptive) expectedRate() float64 {
	if infl := a.last.inflight; infl > 0 {
		return a.x * math.Min(1, float64(a.limit.Load())/infl)
	}
	return a.x
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
		kind := cohortRound
		if a.restartUp {
			kind, a.restartUp = cohortStart, false
			size = uint64(min(max(int(a.est+0.5), 1), maxCohort))
		}
		a.ring.push(from, from+size, kind).off = a.kindOff
	}
	plain := s.Latency <= 0
	switch {
	case !measured:
		lat = unmeasured
	case s.Dropped:
		lat = math.Inf(1)
	}
	a.noteKind(s.Ticket, lat, plain)
	co := a.ring.find(s.Ticket)
	if co == nil {
		return // its cohort was judged already
	}
	i := s.Ticket - co.from
	if !math.IsNaN(co.lat[i]) {
		return // its latency came early (OnLatency)
	}
	co.got++
	co.lat[i] = lat
	if !measured {
		return
	}
	if s.Dropped {
		co.drops++
	}
	co.infl[i], co.plain[i] = int32(s.Inflight), plain
	co.n++
	co.sumInfl += float64(s.Inflight)
	co.maxInfl = max(co.maxInfl, s.Inflight)
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
		if a.slowStart && a.climbWait && co.from < a.stepAt {
			// Admitted before the slow start's last step: it measures
			// the old concurrency (below the capacity if the step is),
			// not the step. Pooled in a window, such cohorts held it
			// open for up to three round trips, the used limit not
			// reached (traced: 200 ms, σ 0.5, a start at a quarter of
			// 3×64 slots: 1.4 service times from a step to the next).
			a.climbBuf[a.climbAt].addCohort(co)
			return
		}
		a.win.add(co)
		a.win.cohorts++
		a.closeWindow(int(a.est + 0.5))
	}
}

// fixSE floors s's standard error with the winsorized deviation pooled
// over recent windows: one window's own deviation is noisy, and it is
// small exactly when the window's statistic is low by chance, which would
// make a chance-low baseline look precise.
func (a *adaptive) fixSE(s *windowStats) {
	if s.div <= 0 {
		return
	}
	// A window of a request or two has no spread of its own (its
	// winsorized deviation is 0): its error is the pooled one alone.
	if s.sw > 0 {
		w := math.Min(1, float64(s.n)/float64(maxCohort/4))
		if a.swEst == 0 {
			a.swEst = s.sw
		} else {
			a.swEst += 0.25 * w * (s.sw - a.swEst)
		}
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
	// s is a field, not a local: passed to a.step (a function value)
	// and to debugWindow, a local moved to the heap, one allocation a
	// window.
	s := &a.judged
	*s = a.win.stats(c.keep(), lim)
	a.noteCut(s.cut)
	a.fixSE(s)
	s.x = a.throughput()
	a.estimate(s)
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
	if (!precise || !enough) && w.cohorts < maxWindowCohorts && w.n < maxWindow-maxCohort {
		return
	}
	a.since += float64(w.cohorts)
	a.sinceUp += float64(w.cohorts)
	a.climbBuf[1-a.climbAt].take(w, a.slowStart)
	w.reset()
	if s.n == 0 {
		return
	}
	a.noise += noiseWeight * (s.winSE*s.winSE - a.noise)
	if dropped {
		a.est = clampF(a.est*c.Backoff, c.Min, c.Max)
		a.capEst = math.Min(a.capEst, a.est)
		a.cut.armed = false
	} else {
		a.rebase(s)
		before, ceil := a.est, a.ceil
		if ceil >= before {
			ceil = 0
		}
		a.est = clampF(a.step(a, s), c.Min, c.Max)
		if a.ceil >= a.est {
			// The estimate fell to the ceiling: it rules again.
			a.ceil = 0
			a.safe.Store(0)
		}
		moved := a.poolClimbRef()
		a.noteLast(s)
		if moved {
			a.estimate(&a.last) // against the baseline now, as the next window will be
		}
		if debugWindow != nil {
			debugWindow(a, s, before)
		}
		if s.queue > 0 && before-a.est > math.Max(1, 2*s.queueSE) {
			// Check the cut on a later window; a chain of cuts keeps the
			// first limit to return to.
			from := before
			if a.cut.armed {
				from = math.Max(from, a.cut.from)
				ceil = math.Max(ceil, a.cut.ceil)
			}
			a.cut = cutCheck{armed: true, from: from, ceil: ceil, inflight: s.inflight, stat: s.stat, x: s.x, se: s.se}
		}
	}
	if a.probe.phase == probeIdle && (a.urgent || !s.congested()) {
		switch {
		case a.dueDown(s):
			a.startProbe(s, false)
		case a.dueUp(s):
			a.startProbe(s, true)
		}
	}
	// A probe that did not start (see startProbe) leaves the new estimate
	// to store.
	if a.probe.phase != probeRunning {
		a.store()
	}
}

// noteLast makes window s the last, the reference the next window's
// growth is judged against (see growthSinceLast), unless s held the slow
// start's step only in part (see gradientStep).
func (a *adaptive) noteLast(s *windowStats) {
	if !a.partial {
		a.last = *s
		a.climbAt = 1 - a.climbAt
	} else {
		// A window at the step's old concurrency: below the capacity
		// when the step is.
		a.climbBuf[a.climbAt].join(&a.climbBuf[1-a.climbAt])
	}
	a.partial = false
}

// dueDown reports whether a probe below the limit is due after window s:
// an urgent one at once; a scheduled one every a.every cohorts, only
// while demand fills the limit (a probe under low demand would measure a
// quieter machine than the loaded one — the lab's processes share the
// CPUs — and make demand wait), and not while the limit climbs (the
// slow start, a climb, a probe above that found room): a climb's next
// window measures its step, and a probe below in between cost it two
// windows a time (traced: 200 ms, σ 0.5, 3×64 slots cut to a quarter and
// back — the return took 26 service times to settle with three such
// probes, 18 without).
func (a *adaptive) dueDown(s *windowStats) bool {
	return a.urgent || a.since >= a.every && s.used && a.climb == 0 && !a.upOK // the slow start is a climb
}

// dueUp reports whether a probe above the limit is due after window s:
// only while demand fills the limit, no refusal's ceiling rules and the
// slow start is over (its own steps probe above, doubling), when
// the queue's shortfall asked for one (wantUp), or probeUpEvery cohorts
// after the last if s shows no queue (upSkipMax times that if it does).
// A queue in sight says the limit already runs above the capacity:
// capacity that comes back empties it, and the shortfall asks. Probing
// there anyway took a limit of 14 over 12 slots to 17–19 for half of
// every few round trips (traced: 200 ms, σ 0.5, 3×4 slots; the limit's
// CV 0.15–0.23, never within ±15 % for long). But a queue read from a
// baseline that sits low is not there, and only a probe above finds the
// room it hides (traced: σ 0.9, 3×16 slots cut to a quarter and back —
// without the backstop the return was not found in the 40 service times
// left, the limit at 22 over 48; with it, at the phase's end): hence the
// backstop.
func (a *adaptive) dueUp(s *windowStats) bool {
	if !s.used || a.ceil != 0 || a.slowStart {
		return false
	}
	return a.wantUp || a.sinceUp >= probeUpEvery && (!s.visible() || a.sinceUp >= upSkipMax*probeUpEvery)
}

// estimate fills in the queue estimate, its errors and the target.
func (a *adaptive) estimate(s *windowStats) {
	if s.n == 0 || s.x == 0 || math.IsInf(s.stat, 1) {
		return
	}
	// Little's law on the slots: requests completing at x per second, each
	// holding its slot at least about base, keep x·base slots busy, so
	// the queue is at most inflight − x·base. Without this bound a window
	// whose wait outgrew its throughput (the requests admitted during a
	// start-up far above capacity, before the cut) reads as a queue of
	// the whole concurrency: a capacity of 0, the limit at its minimum,
	// and round trips of one request to climb back from it. In steady
	// state x × stat < inflight (stat is the fastest half's latency), so
	// only such a transient window hits the bound; it is censored (see
	// gradientStep).
	base, baseVar, framed := a.queueBase()
	s.queue, s.framed = (s.stat-base)*s.x, framed
	if hi := math.Max(s.inflight-s.x*a.base, 0); s.queue > hi {
		s.queue, s.censored = hi, true
	}
	s.winSE = s.x * s.se
	s.baseSE = s.x * math.Sqrt(baseVar)
	s.queueSE = math.Hypot(s.winSE, s.baseSE)
	if a.noise == 0 {
		a.noise = s.winSE * s.winSE
	}
	s.target = a.target(s)
}
