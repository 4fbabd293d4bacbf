package admit

import "math"

// A backend that answers 429 when full (or fails fast) shows its capacity
// by refusing: the limit gets a ceiling one below the concurrency that was
// refused, which lifts by round trips once taken. This file holds the
// ceiling's life: set (refused), lifted (liftCeil) and put back after a
// slowdown's return (returnUnder).

// refused handles a request refused at concurrency inflight: the backend
// took no more, so the limit gets a ceiling one below it at once (see
// adaptive).
func (a *adaptive) refused(inflight int) {
	if debugRefused != nil {
		defer debugRefused(a, inflight, a.ceil)
	}
	ceil := math.Max(float64(inflight-1), float64(a.cfg.Min))
	if a.probe.up && a.probe.phase != probeIdle {
		// A probe above the limit was refused: there is no room above.
		// It ends now; its round trip is judged as any other.
		for i := 0; i < a.ring.count; i++ {
			if co := &a.ring.c[(a.ring.head+i)%numCohorts]; co.kind == cohortUp {
				co.kind = cohortRound
			}
		}
		a.probe = prober{}
		a.short, a.upOK, a.wantUp = 0, false, false
		// But refused above the estimate, it proved the room below: every
		// request up to there was taken. A backend that answers 429 when
		// full keeps no queue for the latency to show its capacity by
		// (traced: 3×64 slots answering 429, a node back: the probe was
		// refused at 193, the estimate stayed at 170, the ceiling of 192
		// above it was dropped, and the limit stayed at 0.88 of the
		// slots); the estimate takes the ceiling, less the queue there was.
		if c := ceil - math.Max(a.last.queue, 0); c > a.capEst && ceil > a.est {
			a.capEst = c
			a.est = clampF(c+a.target(&a.last), a.cfg.Min, a.cfg.Max)
		}
	}
	if a.ceil == 0 || ceil < a.ceil {
		a.ceil = ceil
		a.safe.Store(int64(ceil + 0.5))
		a.cut.armed = false
		if a.probe.phase != probeRunning {
			a.store()
		}
	}
	a.ceilAge = 0
	a.ceilAt = a.tickets.Load() + uint64(ceilWait)*uint64(a.ceil+0.5)
}

// ceilWait: round trips at a ceiling without a refusal before it is safe
// and lifts. A lift refused at the level refused before used to wait
// twice as long before the next (up to 8 round trips), so that a steady
// backend was not refused every few round trips; since a call every node
// refused waits for a place without a retry token (see
// Bulkhead.Requeue), such a refusal costs a few calls a short wait, and
// the backoff only delayed finding capacity that came back (traced:
// 200 ms, σ 0.5, 3×64 slots answering 429 cut to 16 each and back — the
// ceiling of 48 lifted 3.7 service times after the slots returned, and
// the return cost 5 % of the run's goodput).
const ceilWait = 2

// liftCeil lifts the ceiling after refusals, by round trips at it: once
// ceilWait round trips' tickets (ceilWait × the ceiling) went out without
// a refusal it is safe and rises by one; taken, the backend has room
// again, and the ceiling doubles each further round trip (TCP's slow
// start; by 1, 2, 4, … it took 8 round trips from a quarter of the slots
// back to them: see TestCeilingDoublesOnceTaken); reaching the estimate,
// it goes. At a steady capacity the first step is refused, and a refusal
// starts the count again.
//
// On a backend that answers 429, a doubling lift that demand filled
// (ceilPeak) and that reached the estimate lifts the estimate with it
// instead: such a backend keeps no queue whose latency would show its
// capacity, and the estimate may have fallen while the ceiling held (a
// latency window backs it off; before the twenty-third pass a window of
// refusals did too) with nothing to raise it when the slots come back.
// Dropping the ceiling there left the limit to the latency windows,
// which on a heavy tail read a baseline's error as a queue and held it
// (traced: 500 ms, σ 0.7, 4×8 slots answering 429 at 2× offered, a start
// at twice the slots, the slots cut to a quarter and back, seed 1 — the
// estimate backed off from 36 to 12 under the ceiling of 8, the ceiling
// went at 18, and the limit sat at 0.48 of the slots to the end). Following it, the ceiling doubles on until a
// refusal finds the slots. (An estimate floated above the ceiling this
// way was never tried there: a limit returning from a slowdown returns
// under the ceiling, not to it — see returnUnder.)
func (a *adaptive) liftCeil() {
	if a.ceil == 0 || a.tickets.Load() < a.ceilAt {
		return
	}
	a.safe.Store(int64(a.ceil + 0.5))
	filled := float64(a.ceilPeak) >= a.ceil
	a.ceilPeak = 0
	if a.ceilAge == 0 {
		a.ceil++
	} else {
		a.ceil *= 2
	}
	a.ceilAge++
	a.ceilAt = a.tickets.Load() + uint64(a.ceil+0.5)
	if a.ceil >= a.est && a.refusing && a.ceilAge > 1 && filled {
		a.capEst = math.Max(a.capEst, a.ceil)
		a.est = clampF(a.ceil+1, a.cfg.Min, a.cfg.Max)
	}
	if a.ceil >= a.est {
		a.ceil = 0
		a.safe.Store(0)
	}
	if a.probe.phase != probeRunning {
		a.store()
	}
}

// returnTo asks an urgent probe whether the cut that just came was a
// queue or a slower backend; a slower one returns the limit to level
// (a chain of cuts keeps the highest), under ceil, the refusal's ceiling
// that held the limit below level then (0: none; see returnUnder).
func (a *adaptive) returnTo(level, ceil float64) {
	a.urgent, a.restore = true, math.Max(level, a.restore)
	if ceil > 0 && ceil < level {
		a.underCeil = math.Max(a.underCeil, ceil)
	}
}

// returnUnder puts back the refusal's ceiling c (0: none) that held the
// limit below the estimate when the cut came, as the limit returns from a
// slowdown. The estimate above such a ceiling was never tried: a backend
// that answers 429 keeps no queue for the windows to stop its climb. A
// limit returned to it went straight past the level this gateway had
// held, taking places the other gateways in front of the same nodes held
// (traced: 200 ms, σ 0.5, 3×64 slots answering 429 behind two gateways,
// 3× slower, seed 1, with the estimate following a taken ceiling as
// liftCeil does — one gateway returned to 167 from a ceiling of 96 and
// held 156 of the 192 places, the other 36 for the rest of the run, P0
// 0.960). Under the ceiling it returns to the level it held, and the
// ceiling lifts from there as after any refusal.
func (a *adaptive) returnUnder(c float64) {
	if c <= 0 || c >= a.est || (a.ceil > 0 && a.ceil <= c) {
		return
	}
	a.ceil, a.ceilAge = c, 0
	a.safe.Store(int64(c + 0.5))
	a.ceilAt = a.tickets.Load() + uint64(ceilWait)*uint64(c+0.5)
}
