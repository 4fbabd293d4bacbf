package admit

import (
	"math"
)

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
				a.urgent, a.restore, a.underCeil = true, ck.from, ck.ceil
				a.forgetDoubt()
			}
		}
	}
	if z := math.Sqrt(s.se*s.se + a.baseVar); s.stat < a.base-3*z {
		// Faster than the no-queue latency: the backend got faster.
		// If its throughput grew as much (same slots, shorter
		// requests), the capacity in requests stays; otherwise the
		// baseline was too high, and the capacity measured against it
		// moves with it (see shiftBase).
		capEst, faster := a.capEst, a.spedUp(s.stat, a.base, a.last.x, s.x)
		from := [2]float64{a.base, a.baseX}
		a.pool.reset()
		a.setBase(s.stat, s.se*s.se)
		if faster {
			a.capEst = capEst
		} else if a.capEst > 0 {
			// Whichever it was, that window ran s.inflight requests at
			// what is now the no-queue latency: the capacity is at least
			// that. The shift above judges the throughput's growth
			// against the last window's, which may have held part of the
			// speed-up already; then it measured the capacity at the
			// minimum (traced: 500 ms, σ 0.7, 2×8 slots answering 429 at
			// 2× offered, 3× slower and back, seed 2 — the window after
			// the return read 0.25 s against a baseline of 0.98 at 33
			// requests a second, the last at 19.4: the capacity 19.5
			// shifted to 1, the limit at 0.19 of the slots to the end).
			a.capEst = math.Max(a.capEst, s.inflight)
		}
		s.queue = 0
		a.every, a.since = probeMinEvery, 0
		// On a queueing backend that window ran at the limit, and its
		// requests queued a little: the new baseline reads high, the
		// capacity measured against it as many requests high, and a
		// climb follows (traced: 200 ms, σ 0.25, 3×64 slots 3× slower and
		// back, seed 1 — the baseline 0.1875 s against 0.1654 with no
		// queue, the limit 1.19–1.36 × the slots until the next scheduled
		// probe below, the return settled in 15.7 service times). An
		// urgent probe below measures it again at once (9.0). Not on a
		// backend that answers 429: it keeps no queue, and its window
		// already read the speed.
		if faster && !a.refusing {
			a.urgent = true
			// The capacity kept was measured against the baseline before
			// this window: the urgent probe judges its speed-up from there
			// (see judgeFromBeforeFaster).
			a.fastFrom = from
		}
	}
}

func (a *adaptive) setBase(v, variance float64) {
	if debugBase != nil {
		debugBase(a, v, variance)
	}
	a.shiftBase(v)
	a.baseVar = variance
	a.baseSW = 0
	a.forgetDoubt()
}

// forgetDoubt forgets the probes held in doubt and an urgent question
// asked again (see askAgain): the baseline moved, or the capacity changed
// since they ran.
func (a *adaptive) forgetDoubt() {
	a.suspect = 0
	a.held.reset()
	a.asked = 0
	a.asking.reset()
}

// shiftBase moves the baseline to v and the capacity estimate with it:
// every observation it holds was measured against the old baseline.
func (a *adaptive) shiftBase(v float64) {
	if a.base > 0 && a.capEst > 0 {
		a.capEst = math.Max(a.capEst+(v-a.base)*a.x, 1)
	}
	a.base, a.baseX = v, a.x
}

// changedBase takes probe co, statistic stat, that read the backend
// changed: the pool starts afresh from it (with the probes held in doubt
// when they read above the baseline as this one). Faster with the
// throughput to show it, the capacity in requests stays (see spedUp);
// the shift that corrects a baseline read high took a backend that got
// 3× faster to a fifth of its slots (traced: 500 ms, σ 0.7, 4×8 queueing
// slots at 5× offered, 3× slower and back, seed 3 — the probe after the
// return read 0.21 s against 0.68, the capacity 31.6 shifted to 6.7 while
// the throughput had grown from 20 to 55 a second; the return's fill
// 0.408).
func (a *adaptive) changedBase(co *cohort, stat float64) {
	capEst, faster := a.capEst, a.spedUp(stat, a.base, a.baseX, a.x)
	a.pool.reset()
	a.learnKinds(co, 0, co.size(), true)
	if stat > a.base {
		a.pool.addPool(&a.held)
	}
	a.pool.add(co, a.cfg.keep())
	a.poolBase()
	if faster {
		a.capEst = capEst
	}
	a.every = probeMinEvery
}

// spedUp reports whether the throughput grew from x0 to x as much as a
// backend faster by base0/v would make it at the same concurrency (same
// slots, shorter requests): then a baseline v below base0 is the
// backend's new speed, not the old baseline's error. A window judges it
// against the last window's throughput (see rebase), a probe against the
// throughput when the baseline last moved (see changedBase).
func (a *adaptive) spedUp(v, base0, x0, x float64) bool {
	return x0 > 0 && v < base0 && x-x0 > slopeShare*(base0/v-1)*x0
}

// poolBase sets the baseline from the pooled probe samples; a probe held
// in doubt is forgotten.
func (a *adaptive) poolBase() {
	if a.repoolBase() {
		a.forgetDoubt()
	}
}

// repoolBase moves the baseline to the pooled samples' statistic (under a
// new offset, see finishKinds) and reports whether there was one; a probe
// in doubt stays in doubt.
func (a *adaptive) repoolBase() bool {
	s, ok := a.poolStats()
	if !ok {
		return false
	}
	if debugBase != nil {
		debugBase(a, s.stat, s.se*s.se)
	}
	a.shiftBase(s.stat)
	a.baseVar, a.baseSW = s.se*s.se, s.sw
	return true
}

// poolWindow returns a scratch window holding p's samples under the
// offset now (those not back count as drops).
func (a *adaptive) poolWindow(p *basePool) *window {
	w := &a.scratch[0]
	w.reset()
	n := p.samples(w.lat[:], a.kindOff)
	w.n = n
	for _, v := range w.lat[:n] {
		if math.IsInf(v, 1) {
			w.drops++
		}
	}
	return w
}

// poolStats returns the pooled samples' statistic under the offset now.
func (a *adaptive) poolStats() (windowStats, bool) {
	s := a.poolWindow(&a.pool).stats(a.cfg.keep(), 0)
	a.fixSE(&s)
	return s, s.n > 0 && !math.IsInf(s.stat, 1)
}

// basePool keeps the samples of the latest poolProbes probes (the
// requests not back when a probe was judged count as slow: +Inf), so that
// the baseline is the statistic of many samples, free of the small-sample
// bias of one probe, and forgets old probes. It keeps plain calls' round
// trips as measured, so that the baseline follows the offset as the
// kinds' levels are learned (see finishKinds).
type basePool struct {
	lat   [maxBase]float64 // a FIFO: lat[head:head+n] (mod maxBase)
	plain [maxBase]bool    // beside lat: a plain call's round trip, not offset
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

func (p *basePool) push(v float64, plain bool) {
	if p.n == maxBase {
		p.drop(1)
	}
	i := (p.head + p.n) % maxBase
	p.lat[i], p.plain[i] = v, plain
	p.n++
}

// add pools a cohort's samples as one probe, forgetting the oldest probe
// beyond poolProbes; keep is the share of a cohort its statistic keeps.
//
// A cohort judged before keep of its tickets were back (evicted from a
// full ring: on nodes that answer 429 every requeued call takes a new
// ticket, and the tickets outrun the judgments) is not pooled. Its
// tickets not back count as slower than any kept, and in its own
// statistic that holds; pooled, they outnumber its samples back and the
// pool's fastest share reaches into the other probes' slow halves
// (traced: 500 ms, σ 0.7, 4×8 slots answering 429, 5× offered, a start at
// twice the slots, seed 7 — the start-up cohort judged with 23 of the 32
// tickets it pooled not back, the first probe below then moved the
// baseline from 0.20 s to 0.32 s against 0.24 s with no queue; the windows
// under the refusals' ceiling read below it, so when the nodes got 3×
// slower the slowdown was measured from the baseline, not framed by the
// last window (see queueBase), read as a queue, and the limit fell to a
// quarter of the slots: fill 0.26 in that phase, P0 0.74 over the run;
// not pooled, 0.96 and 1.0).
func (p *basePool) add(co *cohort, keep float64) {
	back := 0
	for i := range co.size() {
		if !math.IsNaN(co.lat[i]) {
			back++
		}
	}
	if float64(back) < keep*float64(co.size()) {
		return
	}
	p.makeRoom()
	k := 0
	for i := range co.size() {
		switch v := co.lat[i]; {
		case v == unmeasured:
		case math.IsNaN(v):
			p.push(math.Inf(1), false) // not back: slower than any kept
			k++
		default:
			p.push(v, co.plain[i])
			k++
		}
	}
	p.sizes[p.count] = k
	p.count++
}

// extend adds samples (and pending more, slower than any) to the latest
// probe pooled, as far as they fit.
func (p *basePool) extend(lat []float64, pending int) {
	k := 0
	for _, v := range lat {
		if p.n == maxBase {
			break
		}
		p.push(v, false)
		k++
	}
	for ; pending > 0 && p.n < maxBase; pending-- {
		p.push(math.Inf(1), false)
		k++
	}
	p.sizes[p.count-1] += k
}

// makeRoom forgets the oldest probe when poolProbes are pooled.
func (p *basePool) makeRoom() {
	if p.count == poolProbes {
		p.drop(p.sizes[0])
		copy(p.sizes[:], p.sizes[1:])
		p.count--
	}
}

// addPool moves the probes of q into p after p's, oldest first, and
// empties q (so that they cannot be pooled twice: a merge whose pool has
// no statistic, every sample dropped, does not forget the doubt).
func (p *basePool) addPool(q *basePool) {
	defer q.reset()
	at := 0
	for _, k := range q.sizes[:q.count] {
		p.makeRoom()
		for i := range k {
			j := (q.head + at + i) % maxBase
			p.push(q.lat[j], q.plain[j])
		}
		at += k
		p.sizes[p.count] = k
		p.count++
	}
}

// samples copies the pooled samples into dst as the statistics read
// them: plain calls' less off.
func (p *basePool) samples(dst []float64, off float64) int {
	n := 0
	for i := 0; i < p.n && n < len(dst); i++ {
		j := (p.head + i) % maxBase
		v := p.lat[j]
		if p.plain[j] && !math.IsInf(v, 1) {
			v -= off
		}
		dst[n] = v
		n++
	}
	return n
}

func (a *adaptive) store() {
	if a.probe.phase == probeRunning {
		return
	}
	a.limit.Store(a.restingLimit())
}

// restingLimit is the limit outside probes: the estimate under the
// refusal's ceiling, if any. Guarded by mu.
func (a *adaptive) restingLimit() int64 {
	l := a.est
	if a.ceil > 0 {
		l = math.Min(l, a.ceil)
	}
	return int64(math.Max(1, l+0.5))
}

// estimateLimit returns the limit outside probes and whether a probe
// lowers the limit now.
func (a *adaptive) estimateLimit() (float64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.est, a.probe.phase == probeRunning
}

// queueBase returns the no-queue statistic a window's queue is measured
// from, and its variance: the baseline; or, on a backend that answered
// that it is full (429, Sample.Refused), the last window's statistic when
// that reads above the baseline and is finite (framed) — while a
// refusal's ceiling holds the limit, and during a slow start.
//
// Such a backend keeps no queue: the level of its latency above the
// baseline is its speed, and a slowdown read as a queue cut the limit
// under the ceiling until a probe below told the two apart (traced:
// 200 ms, σ 0.5, 3×16 slots answering 429, mixed priorities, 3× slower and
// back, seed 1: the return settled in 30 service times, 0.947 of the
// static semaphore's goodput; framed, in 8, 0.984). A queue there would
// show as growth from one window to the next, which is what a framed
// window measures, as HyStart judges each round's delay against the last
// round's (RFC 9406). Queueing backends keep the baseline: framing their
// slow start too (its baseline, the start-up's, often reads a few
// standard errors low) gained as many cells of the matrix but cost the
// guard's slow heavy-tailed workload (TestGuardShedsOnlyExcess: 0.946 of
// the capacity at 3× offered, against 0.952). And only a 429 makes a
// refusing backend: a dead node's fast errors set a ceiling as well, and
// framing them hid the survivors' queue (lesson 07: the limit did not
// settle after the kill in 2 of 5 runs).
func (a *adaptive) queueBase() (base, variance float64, framed bool) {
	l := &a.last
	if a.refusing && (a.ceil > 0 || a.slowStart) && l.n > 0 && l.stat > a.base && !math.IsInf(l.stat, 1) {
		return l.stat, l.se * l.se, true
	}
	return a.base, a.baseVar, false
}

// judgeFromBeforeFaster runs when the urgent probe after a window that
// read the backend faster (see rebase) has been judged: base and capEst
// are the baseline and capacity before the probe was judged, from the
// baseline and throughput before that window. The capacity kept in
// requests was measured against the baseline before the window, and a
// window that ran while the speed changed reads between the two speeds.
// A probe that reads the rest of the speed-up moves the baseline again;
// judged against that window alone, its throughput had not grown and the
// capacity shifted with the baseline, though nothing had been measured
// against the window's reading (traced: 500 ms, σ 0.7, 4×8 queueing
// slots at 5× offered, 3× slower and back, seed 3, probes above bounded
// to 1.5 round trips — the window read 0.42 s against 0.68 as the
// throughput grew from 22 to 52 a second, the probe 0.23 s, the capacity
// 30.7 shifted to 21.5; the return's fill 0.691). Judged from the
// baseline before the window, the capacity stays.
func (a *adaptive) judgeFromBeforeFaster(from [2]float64, base, capEst float64) {
	if a.base < base && a.spedUp(a.base, from[0], from[1], a.x) {
		a.capEst = math.Max(a.capEst, capEst)
	}
}
