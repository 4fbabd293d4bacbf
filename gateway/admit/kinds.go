package admit

import (
	"math"
	"slices"
)

// Two kinds of request share the latency signal: a stream's time to first
// token and a plain call's whole round trip. With no queue they read
// differently (a plain answer is longer than a first token, or shorter),
// so a round trip's statistic would follow its mix of kinds — and the mix
// follows the priorities, not the backend: P0 may be all plain calls, the
// Bulkhead serves P0 first, and an overload guard that sheds P2 leaves
// mostly P0 in flight. A queue adds the same wait to both. So the limiter
// measures the kinds' offset where there is no queue (the start-up's first
// quarter, probes below the capacity) and subtracts it from every plain
// call's signal: both kinds then read alike, whatever the mix.

// minKind: the fewest samples of each kind an offset is measured on.
const minKind = minWindow / 4

// kindWeight: the weight of a probe's offset against the running one.
const kindWeight = 0.25

// kindLearner holds a no-queue cohort's samples until all are back: a
// cohort is judged before its slow requests are, and plain calls come
// back long after streams' first tokens, so an offset measured when it is
// judged would read the plain calls fast.
type kindLearner struct {
	active   bool
	from, to uint64             // its tickets
	lat      [maxCohort]float64 // by ticket offset; NaN until back, unmeasured, +Inf when dropped
	plain    [maxCohort]bool
	got      int
	w        float64 // its weight against the running offset
}

// learnKinds measures the offset on co's tickets [lo, hi), which found no
// queue, once they are all back (see kindLearner), and merges it with
// weight w (1: it replaces the running one). A learner still waiting is
// judged with what it has (its missing requests counted as the slowest
// plain calls).
func (a *adaptive) learnKinds(co *cohort, lo, hi int, w float64) {
	if a.kinds.active {
		a.finishKinds()
	}
	k := &a.kinds
	k.active, k.from, k.to, k.got, k.w = true, co.from+uint64(lo), co.from+uint64(hi), 0, w
	for i := lo; i < hi; i++ {
		k.lat[i-lo], k.plain[i-lo] = co.lat[i], co.plain[i]
		if !math.IsNaN(co.lat[i]) {
			k.got++
		}
	}
	if k.got == hi-lo {
		a.finishKinds()
	}
}

// noteKind files a ticket that came back (lat as a cohort keeps it:
// unmeasured, +Inf when dropped) for the learner, so that it completes.
func (a *adaptive) noteKind(ticket uint64, lat float64, plain bool) {
	k := &a.kinds
	if !k.active || ticket < k.from || ticket >= k.to || !math.IsNaN(k.lat[ticket-k.from]) {
		return
	}
	k.lat[ticket-k.from], k.plain[ticket-k.from] = lat, plain
	k.got++
	if k.got == int(k.to-k.from) {
		a.finishKinds()
	}
}

// finishKinds measures the learner's offset and applies it to every
// cohort awaiting its requests; it changes nothing unless both kinds have
// minKind samples.
func (a *adaptive) finishKinds() {
	k := &a.kinds
	k.active = false
	n := int(k.to - k.from)
	buf := a.scratch[1].sorted[:]
	keep := a.cfg.keep()
	streams, ns := kindStat(k.lat[:n], k.plain[:n], false, keep, buf)
	plains, np := kindStat(k.lat[:n], k.plain[:n], true, keep, buf)
	if ns < minKind || np < minKind {
		return
	}
	w := k.w
	if !a.kindKnown {
		w = 1
	}
	a.kindOff += w * (plains - streams - a.kindOff)
	a.kindKnown = true
	for i := 0; i < a.ring.count; i++ {
		a.ring.c[(a.ring.head+i)%numCohorts].off = a.kindOff
	}
}

// kindStat returns the mean of the fastest keep share of one kind's
// measured samples (as recorded, not offset) and their count, 0 when
// fewer than minKind or than that share are back; buf is scratch. Samples
// not back (NaN) count as plain calls slower than all (a stream's first
// token comes early).
func kindStat(lat []float64, plain []bool, wantPlain bool, keep float64, buf []float64) (float64, int) {
	n, pending := 0, 0
	for i, v := range lat {
		switch {
		case math.IsNaN(v):
			pending++
		case plain[i] == wantPlain && v >= 0 && !math.IsInf(v, 1):
			buf[n] = v
			n++
		}
	}
	if !wantPlain {
		pending = 0
	}
	k := max(1, int(keep*float64(n+pending)+0.5))
	if n < minKind || k > n {
		return 0, 0
	}
	slices.Sort(buf[:n])
	var sum float64
	for _, v := range buf[:k] {
		sum += v
	}
	return sum / float64(k), n
}
