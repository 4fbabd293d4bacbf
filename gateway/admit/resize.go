package admit

import "math"

// Resizer is implemented by a Limiter that takes a change in the number of
// backends serving it: a node out of rotation (dead, ejected) or back in
// it. The balancer knows at once; the latency shows a loss only once the
// survivors' queue has grown, and a return only to a probe above the
// limit. Resize holds the limiter's lock briefly, as OnSample does, and
// never allocates.
type Resizer interface {
	// Resize reports that the backends serving the limiter went from
	// from to to (both ≥ 1; other values are ignored).
	Resize(from, to int)
}

// Resize scales the capacity estimate, the limit and a refusal's ceiling
// by to/from: the nodes that left took their places with them, and the
// nodes back bring as many as the others hold on average. That is a
// prior, not a measurement: on nodes of unequal size the windows then
// measure the rest, as after any change. Windows and probes that straddle
// the change are void (they measured the old set), and so are the checks
// and doubts held about the old capacity; the baseline stays (the nodes
// left serve as fast as before).
//
// Measured on the workload matrix (seeds 1–3), a node lost and back
// settled within the allowance in more cells, and the goodput beside the
// static semaphore that the truth sets at once rose most (see
// docs/LIMITER-PASSES.md, "Thirty-fifth pass").
func (a *adaptive) Resize(from, to int) {
	if from < 1 || to < 1 || from == to {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := float64(to) / float64(from)
	if a.capEst > 0 {
		a.capEst = math.Max(a.capEst*r, 1)
		a.capVar *= r * r
		a.est = clampF(a.capEst+a.target(&a.last), a.cfg.Min, a.cfg.Max)
	} else {
		a.est = clampF(a.est*r, a.cfg.Min, a.cfg.Max)
	}
	if a.ceil > 0 {
		a.ceil = math.Max(a.ceil*r, float64(a.cfg.Min))
		a.safe.Store(int64(a.ceil + 0.5))
	}
	// The throughput moves with the places: the stall test expects
	// completions at the new rate.
	a.x *= r
	a.last.x *= r
	a.last.inflight *= r
	// Nothing measured before the change is judged after it: the open
	// windows and cohorts are void, neither the last window nor the
	// start-up's is a reference for the next window's slope or a probe
	// above, and a probe running now ends.
	a.voidWindows()
	a.last.n, a.startWin.n = 0, 0
	a.cut.armed = false
	a.jump = jumpCheck{}
	a.climb, a.short, a.upOK, a.wantUp = 0, 0, false, false
	a.urgent, a.urgentLong, a.restore, a.underCeil = false, false, 0, 0
	a.fastFrom, a.slowerRef = [2]float64{}, slowerProbe{}
	a.probe = prober{}
	a.forgetDoubt()
	a.limit.Store(a.restingLimit())
}
