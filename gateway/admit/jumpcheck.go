package admit

import (
	"math"
	"time"
)

// jumpCheck judges the start-up's jump by the throughput, before any
// window can: a backend with room for the jump completes the added calls
// about a service time later, so the completions' rate grows with the
// concurrency; a backend without room queues them, and the rate stays
// where it was (BBR leaves its start-up when the delivery rate stops
// growing). A window judges the jump only once the calls admitted at it
// are back, each having waited behind the whole overshoot: behind two
// gateways that started at their share of 3×64 queueing slots and jumped
// to four times it, the first window closed 7–9 service times after the
// jump, and the start settled after 19 of them.
type jumpCheck struct {
	phase    int       // jumpIdle, jumpArmed (waiting for from) or jumpCounting
	n0       float64   // the concurrency before the jump (the start-up's limit)
	x0       float64   // the completions' rate before it, per second
	from     time.Time // when the count starts (armed) or started (counting)
	span     float64   // the count's length, seconds
	done0    uint64    // completions at from
	inflight float64   // calls in flight at from
}

// Jump check phases.
const (
	jumpIdle = iota
	jumpArmed
	jumpCounting
)

// Jump check constants (dimensionless).
const (
	// jumpFilled: below this growth of the concurrency, demand did not
	// fill the jump and the rate could not grow; nothing is judged.
	jumpFilled = 1.5
	// jumpRoomShare: a rate short of the rate before the jump plus this
	// share of the concurrency's growth shows no room. At a growth of
	// about 4 a start into room read 2.7–3.9 times the rate expected with
	// none (3×16 and 3×64 slots), a start at the slots 0.8–1.2 (3×4, 3×16
	// and 3×64 slots; σ 0.25–0.9 for both): the line at 1.75 lies between.
	jumpRoomShare = 0.25
)

// armJump starts the jump check at the slow start's jump from limit n0.
// The count opens a recent cut (about the service time's median) after
// the jump, when calls that found room have begun to complete, and lasts
// as long again, or as long as minWindow completions take at the rate
// before the jump. Not for streams: their completions are the streams'
// ends, not the first tokens the baseline measures.
func (a *adaptive) armJump(n0 float64, now time.Time) {
	// The rate measured so far is mostly the start-up's first wave,
	// which completes together (traced: 3×16 slots, a start at 12: 122
	// completions a second against the 60 of 12 calls of 0.2 s: a jump
	// into room then read 2.2 times the rate expected with none, near the
	// line, against 3.4 with the bound). Little's law bounds it: n0 calls
	// in flight, none queued, complete n0 ÷ the mean service time a
	// second, and the cut (about the median) is at most that mean for a
	// right-skewed service time.
	if jumpCheckOff || a.sawStream || a.x <= 0 || a.cutEst <= 0 || n0 <= 0 {
		return
	}
	x0 := math.Min(a.x, n0/a.cutEst)
	a.jump = jumpCheck{phase: jumpArmed, n0: n0, x0: x0, from: now.Add(time.Duration(a.cutEst * 1e9)), span: math.Max(a.cutEst, minWindow/x0)}
}

// checkJump advances the jump check at a completion; at the count's end,
// a rate that did not grow by a quarter of the concurrency's growth ends
// the slow start at the capacity the rate shows (the limit before the
// jump × the rate's growth), and the windows start from the next ticket.
// Not where demand did not fill the jump (see jumpFilled).
func (a *adaptive) checkJump(now time.Time) {
	j := &a.jump
	switch {
	case j.phase == jumpIdle || now.Before(j.from):
		return
	case !a.slowStart:
		// A window judged the jump first.
		j.phase = jumpIdle
		return
	case j.phase == jumpArmed:
		j.phase, j.from, j.done0 = jumpCounting, now, a.done
		// Every release carries a ticket; should one not, no growth is read.
		j.inflight = max(float64(a.tickets.Load())-float64(a.released), 0)
		return
	}
	d := now.Sub(j.from).Seconds()
	if d < j.span {
		return
	}
	j.phase = jumpIdle
	r := j.inflight / j.n0 // the concurrency's growth
	n := float64(a.done - j.done0)
	e0 := j.x0 * d // the completions to expect with no room
	cut := r >= jumpFilled && n < e0*(1+jumpRoomShare*(r-1))
	if debugJump != nil {
		debugJump(a, r, n, e0, cut)
	}
	if !cut {
		return
	}
	// The capacity the rate shows, and its variance from the count's
	// (Poisson) noise.
	c := j.n0 * math.Max(1, n/e0)
	a.capEst, a.capVar, a.climbVar = c, j.n0*j.n0*n/(e0*e0), 0
	a.climb, a.short, a.upOK, a.wantUp = 0, 0, false, false
	a.slowStart, a.climbWait = false, false
	// The calls admitted so far ran at the jump, or waited behind its
	// queue: the check judged them. Windows start from the next ticket,
	// which the limit admits only once the gateway's share of that queue
	// has drained below it.
	a.voidWindows()
	a.est = clampF(c+a.target(&windowStats{baseSE: a.x * math.Sqrt(a.baseVar)}), a.cfg.Min, a.cfg.Max)
	a.store()
}

// jumpCheckOff, set by tests, leaves the jump to the windows.
var jumpCheckOff bool

// debugJump, when set, sees each jump check's concurrency growth, its
// completions, those expected with no room and its verdict.
var debugJump func(a *adaptive, growth, done, want float64, cut bool)
