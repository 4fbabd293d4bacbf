package admit

import (
	"math"
)

// Probe phases.
const (
	probeIdle    = iota
	probeRunning // the limit is lowered
	probeWaiting // the limit is back; the probe's cohort is awaited
)

// probeAboveRoundTrips bounds a probe above the limit, past its ramp, to
// this many round trips of calls (of the estimate), or minWindow calls
// where that is more. Bounded by the last window's sample count alone, a
// probe after a long window stayed above the limit for several round
// trips (traced: 200 ms, σ 0.5, 3×16 queueing slots, a node lost: 97
// calls, 4.5 service times, and the loss phase settled after 39.6 of
// them). One round trip was too few samples where the service time
// spreads most: the guard's cell (1 s, σ 0.9, 3×24 queueing slots, 3×
// offered) read 0.948 of the capacity over 10 seeds (want ≥ 0.95); 1.5
// reads 0.951, as 2 and 3 do. Below minWindow calls the slope test could
// not tell a small backend's room from its noise: at limit 9 over 8 slots
// (500 ms, σ 0.7, 4×8 slots cut to a quarter and back, held-out seed 1)
// probes above of 16 calls read no room for 64 service times after the
// slots came back, and the return's fill fell to 0.451 (0.945 with a
// window's count; 0.948 with minWindow).
const probeAboveRoundTrips = 1.5

// prober is one baseline probe in progress.
type prober struct {
	phase  int
	limit  int    // the probe's limit
	from   uint64 // its first ticket
	want   int    // its tickets
	urgent bool   // a deep probe after a cut that did not lower the latency as a queue would
	up     bool   // a probe above the limit
	ramp   int    // a probe above the limit: its first tickets, not judged
}

// cutCheck remembers a significant cut until a window after it shows
// whether the latency fell as a queue would.
type cutCheck struct {
	armed    bool
	from     float64 // the limit before the cut
	ceil     float64 // the refusal's ceiling that held the limit below the estimate then (0: none)
	inflight float64 // the cut window's mean in flight
	stat     float64 // its statistic
	x        float64 // its throughput
	se       float64 // its statistic's standard error
}

// startUp judges the start-up cohort: its tickets below startShare × the
// initial limit found free slots (as long as the limit is within
// 1/startShare of the capacity); their statistic is the baseline. The
// cohort's upper half gives the first queue estimate, and the limit moves
// to the capacity at once; a cohort without a queue starts the climb.
func (a *adaptive) startUp(co *cohort) {
	c := &a.cfg
	a.started = true
	size := co.size()
	// The baseline: the first quarter of tickets, then each next quarter
	// as long as it does not read significantly higher (below the
	// capacity, none does, and the baseline gets the whole cohort).
	q := max(1, int(startShare*float64(size)+0.5))
	a.learnKinds(co, 0, q, true)
	base := &a.scratch[1]
	base.reset()
	base.addRange(co, 0, q)
	b := base.stats(c.keep(), size)
	a.noteCut(b.cut)
	a.fixSE(&b)
	if b.n == 0 || math.IsInf(b.stat, 1) {
		// Nothing measured (the first requests refused, dropped or not
		// back yet — behind other gateways' queues): the start-up asks
		// again with the next cohort. Without a baseline a window reads
		// its whole concurrency as a queue.
		a.restartUp = true
		return
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
		if gs.n == 0 || gs.stat > b.stat+startZ*math.Hypot(gs.se, b.se) {
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
	a.pool.add(&start, c.keep())
	if hi >= size {
		a.slowStartFrom(&b)
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
	a.capEst = math.Max(s.inflight-s.queue, float64(hi))
	a.est = clampF(a.capEst+a.target(&s), c.Min, c.Max)
	a.store()
}

// startProbe lowers the limit below the estimated capacity by a noise
// margin, for one cohort (or, up, raises it above the limit: see
// endProbeUp).
func (a *adaptive) startProbe(s *windowStats, up bool) {
	margin := math.Sqrt(a.noise + s.baseSE*s.baseSE)
	capEst := a.est - s.target
	lo := max(a.cfg.Min, 1)
	lim := max(int(math.Floor(capEst-math.Max(1, 2*margin))), lo)
	switch {
	case a.urgent:
		// Below the capacity the cut assumed (the Gradient's estimate,
		// which the target computed before the cut overstates): a queue
		// would be gone there.
		if a.capEst > 0 {
			lim = max(int(math.Floor(math.Min(a.capEst, capEst)-math.Max(1, 2*margin))), lo)
		}
		up = false
	case up:
		lim = int(math.Ceil(a.est + math.Max(math.Max(2, 3*math.Sqrt2*s.winSE), upShare*a.est)))
	}
	if !up && a.capEst > 0 {
		// At most half the capacity deep: a margin wider than that says
		// the noise, not the queue, sets the depth, and a probe that deep
		// starves the queue of waiters (P0 too) while the backend drains.
		lim = max(lim, int(math.Ceil(a.capEst/2)))
	}
	if up {
		a.sinceUp, a.wantUp = 0, false
	} else {
		a.since = 0
	}
	if (!up && float64(lim) >= a.est) || a.ring.count == numCohorts {
		a.urgent, a.urgentLong, a.restore, a.underCeil = false, false, 0, 0
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
	if a.urgent && a.urgentLong {
		// Its one verdict (slower, or fewer?) decides whether a cut
		// under a refusal's ceiling stands: at least minWindow/4
		// requests, however low its limit (several round trips there).
		// Two told nothing: traced, 200 ms, σ 0.5, 3×4 slots answering
		// 429, 3× slower — a probe at limit 2 read 0.34 s against a
		// baseline of 0.11 s with a standard error of 0.13 s, and the
		// cut to a third of the slots stood. (Every urgent probe that
		// long cost small queueing backends more than it saved: on 3×4
		// slots 3× slower the limit fell to a quarter of the slots.)
		want = max(want, minWindow/4)
	}
	a.urgentLong = false
	kind := cohortProbe
	ramp := 0
	if up {
		// The first lim − est tickets raise the concurrency (at once: the
		// queue of waiters takes the room); they join a backend queue, if
		// any, behind the requests already in flight, so from the next
		// ticket on every request sees the raised concurrency. The rest is
		// judged against the last window: as many samples as it had, but
		// at most probeAboveRoundTrips round trips' (of the estimate) or
		// minWindow, whichever is more, and at least minWindow/2.
		ramp = max(lim-int(a.est+0.5), 1)
		kind, want = cohortUp, ramp+max(min(s.n, max(int(probeAboveRoundTrips*a.est+0.5), minWindow)), minWindow/2)
	}
	a.ring.push(from, from+uint64(min(want, maxCohort)), kind).off = a.kindOff
	a.probe = prober{phase: probeRunning, limit: lim, from: from, want: min(want, maxCohort), ramp: min(ramp, maxCohort/2), urgent: a.urgent, up: up}
	a.urgent = false
	a.limit.Store(int64(lim))
	if debugProbeStart != nil {
		debugProbeStart(a, lim, up)
	}
}

// endProbe merges the probe's statistic into the baseline by inverse
// variance (the old estimate's variance grown, so that it is forgotten
// over a few probes). An urgent probe (after a change down, or a cut that
// did not lower the latency as a queue would) ran below the capacity the
// cut assumed, where a queue is gone: at the baseline it confirms the
// cut; well above it (see slower), the backend got slower, its statistic
// is the new baseline and the limit returns.
func (a *adaptive) endProbe(co *cohort) {
	urgent, restore, underCeil, fastFrom, lim, ref := a.probe.urgent, a.restore, a.underCeil, a.fastFrom, a.probe.limit, a.slowerRef
	a.probe, a.restore, a.underCeil, a.fastFrom, a.slowerRef = prober{}, 0, 0, [2]float64{}, slowerProbe{}
	a.since = 0
	a.scratch[0].reset()
	s := a.probeStats(&a.scratch[0], co, 0)
	defer a.store()
	if debugProbe != nil {
		debugProbe(a, s.n, s.stat, s.se)
	}
	if s.n == 0 || math.IsInf(s.stat, 1) {
		return
	}
	z := a.probeZ(co, &s)
	if urgent && a.asked > 0 {
		// The same question asked again: judged on all its probes'
		// samples.
		s = a.askedStats(co)
		z = a.probeZ(co, &s)
	}
	if urgent && a.askAgain(co, &s, z, restore) {
		a.underCeil = underCeil
		return
	}
	if fastFrom[1] > 0 {
		defer a.judgeFromBeforeFaster(fastFrom, a.base, a.capEst)
	}
	if ref.contradicted(lim, &s) { // the slower reading was a queue's
		a.changedBase(co, s.stat)
		return
	}
	switch {
	case a.pool.n == 0:
		a.learnKinds(co, 0, co.size(), true)
		a.pool.add(co, a.cfg.keep())
		a.poolBase()
	case urgent && a.slower(&s, z):
		// A slower backend: same slots, longer requests. The window that
		// cut read the longer requests as a queue: the limit returns to
		// where it was before the cut, unless that window, judged again
		// against the new baseline, still shows a queue (the backend
		// also lost slots).
		a.pool.reset()
		a.learnKinds(co, 0, co.size(), true)
		a.pool.addPool(&a.held) // the same question's earlier probes, if any
		a.pool.add(co, a.cfg.keep())
		a.poolBase()
		l := &a.last
		hi := math.Max(restore-a.target(&s), a.capEst)
		a.capEst = hi
		if q := (l.stat - a.base) * l.x; q > visibleZ*l.queueSE {
			// It still shows a queue: fewer slots as well.
			a.capEst = math.Min(math.Max(l.inflight-q, a.capEst), hi)
		}
		a.capVar = math.Max(a.capVar, changeVar*l.winSE*l.winSE)
		a.est = clampF(a.capEst+a.target(&s), a.cfg.Min, a.cfg.Max)
		a.climb, a.short, a.slowStart = 0, 0, false
		a.every = probeMinEvery
		a.slowerRef = slowerProbe{limit: lim, stat: s.stat, se: s.se}
		a.returnUnder(underCeil)
	case s.stat > a.base+congestionZ*z && a.suspectAbove(&s):
		// Above the baseline: the probe may have run above a capacity
		// that just fell. Believe it only when it repeats. The first
		// probe after the start-up is believed at once when its spread
		// grew with its level (the start-up measured a faster backend);
		// not when the spread stayed, as a queue leaves it (lesson 07,
		// traced: a probe that began as a node died read the new queue,
		// replaced the start-up's baseline with it, and the limit
		// climbed to twice the live slots).
		// Its samples are held: if the next probe is merged with no
		// change of capacity between them, this one was the noise's
		// upper tail and joins the pool too (leaving it out would bias
		// the baseline low, and a baseline that reads low keeps a phantom
		// queue that holds the limit down: traced, a start at a quarter
		// of 3×64 slots whose start-up read the baseline 2 standard
		// errors low climbed to 0.6 of the slots in 300 service times).
		a.suspect++
		a.held.add(co, a.cfg.keep())
		a.every = probeMinEvery
	case math.Abs(s.stat-a.base) > 3*z:
		a.changedBase(co, s.stat)
	default:
		a.learnKinds(co, 0, co.size(), false)
		a.pool.addPool(&a.held)
		a.pool.add(co, a.cfg.keep())
		a.poolBase()
		a.suspect = 0
		// Within two standard errors the probe confirms the baseline: at
		// one, 21–25 % of the probes that read the baseline's own
		// distribution reset the schedule (2–4 % at two: see
		// TestProbesAtTheBaselineBackOff), and probes below kept coming
		// every few round trips.
		if math.Abs(s.stat-a.base) < 2*z {
			a.every = math.Min(2*a.every, probeMaxEvery)
		} else {
			a.every = probeMinEvery
		}
	}
}

// probeZ returns the standard error of probe co's statistic s against
// the baseline: its own, the baseline's and the kinds' mix's.
func (a *adaptive) probeZ(co *cohort, s *windowStats) float64 {
	v := math.Max(s.se*s.se, 1e-18)
	return math.Sqrt(v + math.Max(a.baseVar, a.mixVar(co.plainShare())))
}

// askAgain reports whether the urgent probe co, statistic s, is asked
// again: it starts the same probe once more and holds co's samples. When
// it is not, a question asked before is answered by this probe: its
// earlier probes are held to join it wherever it goes.
//
// The window that cut had a slowdown's spread, and the probe reads
// neither at the baseline (the cut stands) nor clearly slower (the limit
// returns): fewer than minWindow/2 requests, too few to tell, as on a
// small backend with a heavy tail. Taken as a no-queue reading, such a
// probe moved the baseline part of the way, the next window read the rest
// of a slowdown as a queue and cut again, and the next probe, shallower,
// told less (traced: 500 ms, σ 0.7, 4×8 slots answering 429 at 5×
// offered, 3× slower, seed 3: 13 requests, 0.56 s ± 0.23 against a
// baseline of 0.21 s; the limit fell to 0.22 of the slots, P0 0.657). So
// the question is asked again at the same depth, at most maxAsk times,
// the windows leaving the estimate alone until it is answered (see
// gradientStep). Asked again whatever the probe's size, the no-fault
// probes after ordinary cuts (about 30 requests) cost the guard's
// workload its fill (200 ms, σ 0.5, 3×16 slots at 1.2×: 0.949 over ten
// seeds against 0.954); whatever the cut window's spread, P0 in 9
// cell-seeds of the matrix, on 3×4 slots and behind several gateways,
// whose probes read the other gateways' queue.
func (a *adaptive) askAgain(co *cohort, s *windowStats, z, restore float64) bool {
	if a.asked < maxAsk && co.n < minWindow/2 && a.scaled(&a.last) && s.stat > a.base+z && !a.slower(s, z) {
		a.urgent, a.restore = true, restore
		a.startProbe(&a.last, false)
		if a.probe.phase == probeRunning {
			a.asking.add(co, a.cfg.keep())
			a.asked++
			return true
		}
		a.urgent, a.restore, a.underCeil = false, 0, 0 // no probe possible now: judge what there is
	}
	if a.asked > 0 {
		a.held.addPool(&a.asking)
		a.asked = 0
	}
	return false
}

// askedStats returns the statistic of an urgent probe asked again: its
// samples and those of the earlier probes of the same question.
func (a *adaptive) askedStats(co *cohort) windowStats {
	return a.probeStats(a.poolWindow(&a.asking), co, 0)
}

// probeStats adds co's samples from its from-th ticket on to w and
// returns w's statistic as a probe's: one cohort.
func (a *adaptive) probeStats(w *window, co *cohort, from int) windowStats {
	w.addRange(co, from, co.size())
	w.cohorts = 1
	s := w.stats(a.cfg.keep(), 0)
	a.fixSE(&s)
	return s
}

// slower reports whether a probe below the capacity (see startProbe:
// urgent) shows a slower backend rather than the queue the cut before it
// assumed: its latency reads significantly above the baseline although a
// queue would be gone at its depth, and its spread grew with its level (a
// slowdown lengthens every request by the same factor, so the spread
// scales; a queue left by others adds about the same wait to every
// request, so the spread stays).
func (a *adaptive) slower(s *windowStats, z float64) bool {
	if s.stat <= a.base+congestionZ*z {
		return false
	}
	// The window that cut (many requests) and the probe (unless too few
	// for a spread: a winsorized deviation of a few is mostly noise).
	return a.scaled(&a.last) && (s.n < minWindow/4 || a.scaled(s))
}

// suspectAbove reports whether a probe that read above the baseline is
// held in doubt rather than believed (see endProbe): until probeRejects in
// a row have, and the first after the start-up only when its spread did
// not grow with its level.
func (a *adaptive) suspectAbove(s *windowStats) bool {
	return a.suspect < probeRejects && (a.pool.count > 1 || !a.scaled(s))
}

// scaled reports whether s's spread grew with its level over the
// baseline's, as a slowdown's does (see slower); true when either spread
// is unknown.
func (a *adaptive) scaled(s *windowStats) bool {
	return a.baseSW <= 0 || s.sw <= 0 || s.sw/a.baseSW >= 1+slopeShare*(s.stat/a.base-1)
}

// endProbeUp judges a probe above the limit by the slope of the queue:
// between the last window and the probe's, a queue grows by every request
// added (slope 1) while the backend is full, and not at all while it has
// room. No growth means capacity came back (or the baseline reads low):
// the estimate climbs, from the probe's concurrency when the room is
// clear. Growth confirms the capacity: the probe is one more window for
// the filter.
func (a *adaptive) endProbeUp(co *cohort) {
	ramp := a.probe.ramp
	a.probe = prober{}
	defer a.store()
	// Past its first round trip, which ramps the concurrency up.
	w := &a.scratch[0]
	w.reset()
	s := &a.probed // a local handed to a.step (a func value) escaped: one allocation a probe
	*s = a.probeStats(w, co, ramp)
	s.x = a.throughput()
	a.estimate(s)
	l := a.last
	dn := s.inflight - l.inflight
	if debugUp != nil {
		lc := l // a copy, here: handing l to the hook moved it to the heap on every probe
		debugUp(a, s, &lc)
	}
	a.short, a.upOK = 0, false
	// Its requests not back yet count (its slowest: the statistic holds
	// them at the cut): a probe of minWindow/2 judged requests measured
	// fewer on a heavy tail, and on a small backend every probe above
	// went unjudged (traced: 200 ms, σ 0.9, 3×16 slots cut to a quarter
	// and back: 12 of 22 measured, the limit at 16 over 48 slots after
	// the return for 40 service times).
	if s.n+w.pending < minWindow/2 || l.n == 0 || dn < 1 {
		return // demand did not fill it
	}
	noise := math.Hypot(s.winSE, l.winSE)
	if dn < 2*noise {
		return // too small a step to tell
	}
	if s.queue-l.queue < slopeShare*dn {
		// Room above: the backend took the probe's concurrency with no
		// more queue than before, so its capacity is at least that less
		// the queue it had; climb from there.
		a.short, a.upOK = 2*climbAfter, true
		a.every = probeMinEvery
		// Clear room: the growth a standard error below the test's line.
		clearRoom := s.queue-l.queue < slopeShare*dn-noise
		if clearRoom && a.est < float64(a.cfg.Min)+1 && l.queue > visibleZ*l.queueSE && l.stat > a.base {
			// At the minimum no probe below can go lower to measure the
			// baseline again, and clear room above means no queue below:
			// the last window's queue was the baseline's error, which a
			// baseline read low by chance keeps for good (seen in lesson
			// 04: the limit cut from 48 to 15 during the start-up with
			// the nodes' queues empty, then at its minimum of 8 over 48
			// slots for the whole run, P0 0.595). The last window's
			// statistic is a no-queue reading: the baseline, and the
			// capacity measured against the old one moves with it (see
			// shiftBase).
			a.pool.reset()
			a.setBase(l.stat, l.se*l.se)
			a.est = clampF(a.capEst+a.target(s), a.cfg.Min, a.cfg.Max)
		}
		if c := s.inflight - math.Max(l.queue, 0); c > a.capEst && clearRoom {
			// Clear room: the estimate takes the probe's level at once;
			// a marginal one only lets the climb start.
			a.capEst = c
			a.est = clampF(c+a.target(s), a.cfg.Min, a.cfg.Max)
		}
		return
	}
	s.used = true
	a.est = clampF(a.step(a, s), a.cfg.Min, a.cfg.Max)
	a.short = 0
}

// Test hooks (nil outside tests).
var (
	debugBase       func(a *adaptive, v, variance float64)
	debugProbe      func(a *adaptive, n int, stat, se float64)
	debugWindow     func(a *adaptive, s *windowStats, before float64)
	debugUp         func(a *adaptive, s, last *windowStats)
	debugProbeStart func(a *adaptive, lim int, up bool)
	debugStall      func(a *adaptive, gap float64)
	debugRefused    func(a *adaptive, inflight int, ceil float64)
)
