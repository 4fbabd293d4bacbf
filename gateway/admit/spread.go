package admit

// slower reports whether a probe below the capacity (see startProbe:
// urgent) shows a slower backend rather than the queue the cut before it
// assumed: its latency reads significantly above the baseline although a
// queue would be gone at its depth, and its spread grew with its level (a
// slowdown lengthens every request by the same factor, so the spread
// scales; a queue left by others adds about the same wait to every
// request, so the spread stays) or the backend refuses rather than
// queueing.
func (a *adaptive) slower(s *windowStats, z float64) bool {
	if s.stat <= a.base+congestionZ*z {
		return false
	}
	if a.refusing {
		// A backend that refuses at its capacity keeps no queue, its own
		// or other gateways': a reading above the baseline below the
		// capacity is a slowdown, whatever the spread of a few samples
		// says (traced: 200 ms, σ 0.25, 3×64 slots answering 429 behind
		// two gateways, 3× slower, seed 2 — a probe of 17 read 3.17 ×
		// the baseline with 1.62 × its spread, the cut stood, P0 0.986).
		return true
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
