package admit

import "math"

// slowStartFrom starts the climb after a start-up cohort that showed no
// queue anywhere, b its baseline's statistic. The capacity is at least the
// initial limit, and at most 1/startShare of it, as that baseline assumes:
// the estimate jumps there at once (the overshoot of a start at the
// capacity, one window, measures it: a queue on nodes that queue, refusals
// on nodes that answer 429; on plain calls the completions' rate tells
// sooner, see jumpCheck), then climbs by quarters until the queue grows
// with a step (see Gradient). Doubling from the initial limit took a start
// at a quarter of the capacity three steps of about two service times
// each: 2–3 % of the goodput of a run of 160 service times (200 ms, σ 0.5,
// 3×64 slots: 0.95 of the static semaphore's, against 0.98 from a start at
// the capacity).
func (a *adaptive) slowStartFrom(b *windowStats) {
	n0 := a.est
	a.capEst, a.capVar = a.est/startShare, b.se*b.se*a.x*a.x
	a.est = clampF(a.capEst, a.cfg.Min, a.cfg.Max)
	a.short = 2 * climbAfter
	a.climb = startClimb
	a.upOK = true
	a.slowStart = true
	a.climbWait = true
	a.stepAt = a.tickets.Load()
	// The next window's queue is judged by its growth from here (see
	// roomSinceLast), not by its level: a start-up's baseline is often a
	// few standard errors off (traced: 200 ms, σ 0.5, a start at a quarter
	// of 3×64 slots: 0.102–0.137 s over 8 seeds against ≈ 0.12 s with no
	// queue), and the phantom queue of a low one ended the climb at the
	// first window.
	a.startWin = *b
	a.startWin.x = a.throughput()
	a.estimate(&a.startWin)
	a.store()
	a.armJump(n0, a.now())
}

// climbSamples holds a window's samples while the slow start climbs, so
// that the baseline can take them once a step shows they ran below the
// capacity (see poolClimbRef). Values are as the window read them (a
// plain call's offset already subtracted).
type climbSamples struct {
	lat     [maxWindow]float64
	n       int
	pending int  // requests not back when their cohort was judged (the slowest)
	ok      bool // it holds a slow start's window
}

// take copies w's samples when on, else empties c.
func (c *climbSamples) take(w *window, on bool) {
	c.ok = on
	if !on {
		return
	}
	c.n = copy(c.lat[:], w.lat[:w.n])
	c.pending = w.pending
}

// addCohort adds co's samples, as far as they fit, when c holds a window.
func (c *climbSamples) addCohort(co *cohort) {
	if !c.ok {
		return
	}
	for i := range co.size() {
		switch v := co.value(i); {
		case math.IsNaN(v):
			c.pending++
		case v == unmeasured:
		case c.n < maxWindow:
			c.lat[c.n] = v
			c.n++
		}
	}
}

// join adds o's samples to c's, as far as they fit, when both hold some.
func (c *climbSamples) join(o *climbSamples) {
	if !c.ok || !o.ok {
		return
	}
	k := copy(c.lat[c.n:], o.lat[:o.n])
	c.n += k
	c.pending += o.pending
}

// poolClimbRef pools the samples of the slow start's last window (and
// the cohorts admitted at its concurrency since) when the step after it
// showed them below the capacity (refBelow), and moves the baseline to
// the pool; it reports whether it did. The start-up's baseline is a
// quarter to a whole initial limit's requests, often a few standard errors
// off (traced: 200 ms, σ 0.5, a start at a quarter of 3×64 slots: 0.102–
// 0.137 s over 8 seeds against 0.12 s with no queue), and a low one held
// the limit below the capacity until the probes below had corrected it;
// every window of the climb below the capacity read no queue as well
// (TestSlowStartPoolsItsWindows: from a sixteenth of 3×64 slots, 2.0 %
// off the no-queue statistic on average when the slow start ends, 9.2 %
// with the start-up's alone).
func (a *adaptive) poolClimbRef() bool {
	below := a.refBelow
	a.refBelow = false
	ref := &a.climbBuf[a.climbAt]
	if !below || !ref.ok || a.pool.count == 0 {
		return false
	}
	ref.ok = false
	a.pool.extend(ref.lat[:ref.n], ref.pending)
	a.poolBase()
	return true
}
