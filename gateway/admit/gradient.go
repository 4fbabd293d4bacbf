package admit

import "math"

// Gradient is a queue-estimating limit in the style of TCP Vegas, with the
// capacity as the state of a filter. Each window (see adaptive) estimates
// the requests waiting at the backend, queue, from how far the window's
// latency statistic sits above its no-queue baseline, and that estimate's
// standard error. The window's requests started at a mean concurrency of
// inflight, so a window that shows a queue observes the capacity
//
//	capacity = inflight − queue
//
// whatever the service time, tail or slot count. The observations are
// merged by a Kalman filter (gain from their measured variance), so the
// limit's noise is the filter's, not one window's; an observation more
// than changeZ standard deviations from the estimate is a change (a node
// lost, slots cut) and replaces it at once. A change down may also be a
// slower backend, whose longer requests read as a queue: a probe below
// the new estimate tells them apart (see endProbe). The limit is
//
//	limit = capacity + target
//
// where target is targetZ standard errors of a window's queue estimate: a
// queue kept at the backend so that the slots stay busy through the
// noise, and so that every window sees the queue and measures the
// capacity. A window at the limit that shows no queue at all only says
// capacity ≥ inflight: when the queue's shortfall below the target,
// accumulated (a CUSUM), passes climbAfter standard errors, the estimate
// climbs, by a standard error and then doubling each window (at most
// maxClimbShift times), until the queue shows again and grew with the
// last step (see roomSinceLast: a queue read against a baseline that sits
// low shows without growing). A start-up that showed no queue jumps to
// 1/startShare of its initial limit (the most capacity the start-up's
// baseline allows for), then climbs the same way by quarters until the
// queue grows with a step; the window that shows it, or the jump's
// overshoot, measures the capacity — or, sooner, the completions' rate,
// which does not grow with an overshoot (see jumpCheck). Capacity that comes
// back (a node, slots) is found by the probes above the limit, every
// probeUpEvery cohorts while demand fills it (BBR's bandwidth probe): one
// whose queue grew less than half the requests it added found room, and
// when clearly so (a standard error below that line) the capacity
// estimate takes the probe's concurrency less the queue there was at
// once, so the climb starts there. While demand stays
// under the limit nothing moves: the limit would run away with nothing
// measured there.
type Gradient struct{ *adaptive }

func newGradient(cfg LimiterConfig) *Gradient { return &Gradient{newAdaptive(cfg, gradientStep)} }

// Filter constants (dimensionless).
const (
	// changeZ: an observation this many standard deviations below the
	// estimate (or above it, with a queue in sight) replaces it.
	changeZ = 3.0
	// climbSlack and climbAfter: a CUSUM of the queue's shortfall below
	// the target, in window standard errors less climbSlack, above
	// climbAfter starts the climb.
	climbSlack = 0.5
	climbAfter = 3
	// climbStep: the climb's first step, as a share of the capacity
	// estimate (at least a window standard error and one request).
	climbStep = 0.125
	// maxClimbShift caps the climb's doubling; maxClimb caps a step, as a
	// share of the capacity (the overshoot when the queue shows again).
	maxClimbShift = 5
	maxClimb      = 0.25
	// targetShare caps the target, as a share of the capacity.
	targetShare = 0.06
	// changeVar: the variance of the observation that shows a change, in
	// windows' (it mixes requests from before and after the change).
	changeVar = 4
	// growZ: a slow start's step whose queue grew by this many standard
	// errors of the two windows, if by less than slopeShare of the step,
	// reached the capacity (see notGrownSinceLast).
	growZ = 2.0
	// drift: the capacity's assumed drift per window, as a share of it (the
	// filter's process noise: it forgets old windows).
	drift = 0.01
)

func gradientStep(a *adaptive, s *windowStats) float64 {
	if a.asked > 0 || s.censored && a.capEst > 0 {
		// An urgent probe's question is open (see askAgain): a window
		// now reads a slowdown, if that is what it is, as a queue again.
		// Or the window's wait does not fit its throughput (its requests
		// were admitted far above the capacity, before a cut): it
		// measures nothing but a large queue, which the limit already
		// left. The next windows, admitted at the limit, tell.
		return a.est
	}
	r := s.winSE * s.winSE
	c := s.inflight - s.queue
	switch {
	case a.capEst == 0:
		a.capEst, a.capVar = c, r
	case s.used || s.queue > changeZ*s.queueSE:
		// Below the limit, only a clear queue measures the capacity: a
		// window of low demand shows none, whatever the capacity.
		if s.used {
			// The queue's shortfall below the target, accumulated.
			a.short = math.Max(0, a.short+(s.target-s.queue)/math.Max(s.winSE, 1e-9)-climbSlack)
		}
		nu := c - a.capEst
		v := a.capVar + a.climbVar + r
		slow := a.slowStart
		a.slowStart = false // unless this window steps the climb
		switch {
		case a.climbWait && slow && !s.congested() && s.inflight+2*math.Hypot(s.winSE, a.last.winSE) < a.est:
			// The climb's last step is not in this window yet (its
			// requests were mostly admitted before the limit rose): the
			// next window judges it.
			// Nor is it the reference the next is judged against: the
			// window before the step is (judged against this one, a
			// window 11 requests up read as too small a step to tell,
			// and the slow start ended there: traced, 200 ms, σ 0.9, a
			// start at a quarter of 3×64 slots).
			a.climbWait, a.slowStart = false, true
			a.partial = true
			return a.est
		case a.short > climbAfter && !s.visible() && !a.upOK:
			// Capacity may have come back, or the small queue kept reads
			// low: a probe above the limit tells (see endProbeUp).
			a.wantUp = true
			a.filter(c, r)
		case a.climb > 0 && (!slow && a.roomSinceLast(s) || slow && a.notGrownSinceLast(s)) || a.short > climbAfter && !s.visible():
			// Capacity came back: climb, doubling each window, while the
			// queue shows no more than before the step (a queue read
			// against the baseline may be the baseline's error; its growth
			// with the step is not). The slow start goes on until the
			// queue clearly grew with a step (see notGrownSinceLast).
			a.climb++
			a.refBelow = slow
			step := math.Max(math.Max(s.winSE, 1), climbStep*a.capEst) * float64(int(1)<<min(a.climb-1, maxClimbShift))
			limit := maxClimb*a.capEst + 1
			a.slowStart = slow
			a.stepUp(c, math.Min(step, limit))
			a.climbWait = slow
			a.stepAt = a.tickets.Load()
			a.capVar = math.Max(a.capVar, r)
		case nu*nu > changeZ*changeZ*v && s.queue > 2*s.queueSE:
			// A change: the window that shows it mixes requests from
			// before and after it, so the next windows outweigh it.
			if under := a.climb != 0 && a.ceil > 0 && a.ceil < a.est; c < a.capEst && (a.climb == 0 || under) && a.probe.phase == probeIdle {
				a.urgentLong = under
				// Fewer slots, or a slower backend (its longer requests
				// read as a queue)? A probe below the capacity c tells
				// (see endProbe): there a queue is gone, a slowdown stays.
				// (Right after a climb, the queue is the climb's overshoot,
				// unless a refusal's ceiling held the limit below the
				// climbing estimate: then nothing overshot. A backend that
				// answers 429 shows no queue, so the estimate climbs above
				// the ceiling for good, and a slowdown read as a queue cut
				// it unchecked — traced, 200 ms, σ 0.5, 3×4 slots answering
				// 429, 3× slower: the estimate 21 over a ceiling of 12 cut
				// to 8.9, then 5.5, 4.1; P0 0.931, the slowdown's fill 0.59.
				// Its probe is a long one: see startProbe.)
				// (A chain of cuts keeps the first limit to return to.)
				a.returnTo(a.est, a.ceil)
				a.forgetDoubt()
			}
			a.capEst, a.capVar, a.climbVar = c, changeVar*r, 0
			a.climb, a.short, a.upOK = 0, 0, false
		default:
			a.filter(c, r)
			if s.visible() {
				a.climb, a.upOK = 0, false
			}
		}
	}
	if a.climb == 0 {
		a.slowStart = false
	}
	a.climbWait = a.climbWait && a.slowStart
	a.capVar += drift * drift * a.capEst * a.capEst
	return a.capEst + a.target(s)
}

// roomSinceLast reports whether window s, admitted at a higher
// concurrency than the last (the first window: than the start-up's),
// shows the backend took the added requests with less than slopeShare of
// them queued (a standard error below that line): the same test as a
// probe above the limit (see endProbeUp). A step under two standard
// errors of the two readings tells nothing.
func (a *adaptive) roomSinceLast(s *windowStats) bool {
	excess, noise, step, ok := a.growthSinceLast(s)
	return ok && step >= 2*noise && excess < -noise
}

// notGrownSinceLast reports whether window s, admitted at a higher
// concurrency than the last, does not show the queue clearly grown with
// the step (a standard error above slopeShare of it), or, when the step
// is too small for the two windows' noise, is not congested: the slow
// start's test, which ends on evidence of a queue, as TCP's ends on a
// loss, not on a window too noisy to show room.
func (a *adaptive) notGrownSinceLast(s *windowStats) bool {
	excess, noise, step, ok := a.growthSinceLast(s)
	if grown := excess + slopeShare*step; ok && grown > growZ*noise {
		// The queue grew, if by less than the step: the step reached
		// the capacity. Climbing on, the next step overshoots it for a
		// window after the limit has settled, and the limit's CV takes
		// it (traced with doubling steps after the jump: 200 ms, σ 0.25,
		// a start at a quarter of 3×16 slots at 1.2× offered — the jump
		// landed at the 48 slots, the step to 104 put the CV at 0.20;
		// the matrix's seeds 1–3 gained 12 cell-seeds with this test).
		return false
	}
	return ok && (step < 2*noise || excess < noise)
}

// growthSinceLast compares window s with the last (the first window
// after the start-up: with the start-up's): ok when there is one and s
// shows no congestion; excess is the queue's growth less slopeShare of
// the step in flight, noise the two readings' standard error.
func (a *adaptive) growthSinceLast(s *windowStats) (excess, noise, step float64, ok bool) {
	l := &a.last
	if l.n == 0 {
		l = &a.startWin // the first window after the start-up
	}
	if l.n == 0 || s.congested() {
		return 0, 0, 0, false
	}
	step = s.inflight - l.inflight
	noise = math.Hypot(s.winSE, l.winSE)
	lq := l.queue
	if s.framed {
		lq = 0 // s's queue is measured from l's statistic (see queueBase)
	}
	return s.queue - lq - slopeShare*step, noise, step, true
}

// stepUp takes a climb's step from the capacity c a window read (or the
// estimate, if higher). The step is a guess, not a measurement: the
// capacity lies somewhere in it, so the window that next weighs the
// capacity does so against a standard error of half the step
// (climbVar). Weighed with the filter's variance alone, the windows
// after an overshoot moved the estimate a quarter to a half of the way
// back each (traced: 200 ms, σ 0.25, 3×4 queueing slots, a node's
// return: the estimate climbed to 15.6 over 12 slots and came down
// 0.2–0.6 of a request a window; the limit outside probes sat above the
// settle band for about 10 service times, and the return settled in 21
// of them, against 13.7 with the step's variance).
func (a *adaptive) stepUp(c, step float64) {
	a.capEst = math.Max(a.capEst, c) + step
	a.climbVar = step * step / 4
}

// filter merges an observation c of the capacity, of variance r; a
// climb's step not yet weighed (climbVar) widens the estimate's variance
// for it.
func (a *adaptive) filter(c, r float64) {
	p := a.capVar + a.climbVar
	k := p / (p + r)
	a.capEst += k * (c - a.capEst)
	a.capVar = p * (1 - k)
	a.climbVar = 0
}

// target is the queue the Gradient keeps at the backend: twice the
// capacity estimate's standard error (its filter's and the baseline's), so
// that the slots stay busy, and at least one window standard error, so
// that windows see the queue and measure the capacity; at most
// targetShare of the capacity (at least one request): beyond that a
// noisy backend pays more in latency than it gains in fill.
func (a *adaptive) target(s *windowStats) float64 {
	t := math.Max(targetZ*math.Sqrt(a.capVar+s.baseSE*s.baseSE), math.Sqrt(a.noise))
	return math.Min(t, math.Max(targetShare*a.capEst, 1))
}
