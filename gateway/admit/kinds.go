package admit

import (
	"math"
)

// Two kinds of request share the latency signal: a stream's time to first
// token and a plain call's whole round trip. With no queue they read
// differently (a plain answer is longer than a first token, or shorter),
// so a round trip's statistic would follow its mix of kinds — and the mix
// follows the priorities, not the backend: P0 may be all plain calls, the
// Bulkhead serves P0 first, and an overload guard that sheds P2 leaves
// mostly P0 in flight. A queue adds the same wait to both. So the limiter
// measures each kind's no-queue level (the start-up's first quarter,
// probes below the capacity) and subtracts their difference, the offset,
// from every plain call's signal: both kinds then read alike, whatever
// the mix.
//
// A plain call's length may have a heavy tail (lesson 07: lognormal, p50
// 0.85 s, p99 3.4 s), so one learner's level is noisy: the start-up's 39
// plain calls in lesson 07 measured offsets of 0.11 and 0.30 s in two
// runs around a truth near 0.17 s. A round trip of P0's plain calls only
// then reads that error as a queue, or as none (one run dragged the
// baseline from 0.35 to 0.29 s so). So each kind's level pools every learner
// that has enough of it — one of plain calls only, too, while the backend
// is the one the baseline measured — weighted by its samples, an older
// learner's weight shrinking by kindKeep with each new one.

// minKind: the fewest samples of each kind an offset is measured on.
const minKind = minWindow / 4

// kindKeep: the weight a learner's samples keep against each later
// learner's (in the long run, one of as many samples gets a quarter).
const kindKeep = 0.75

// kindLevel pools one kind's no-queue level: the samples-weighted mean of
// the learners' statistics, and its variance.
type kindLevel struct {
	sum float64 // Σ weight × level
	n   float64 // Σ weight (samples, shrunk by kindKeep per learner)
	v2  float64 // Σ weight² × the variance of the learner's level
}

func (l *kindLevel) mean() float64 { return l.sum / l.n }

// variance returns the pooled level's variance (learners independent).
func (l *kindLevel) variance() float64 { return l.v2 / (l.n * l.n) }

func (l *kindLevel) add(level, se float64, n int) {
	w := float64(n)
	l.sum += level * w
	l.n += w
	l.v2 += w * w * se * se
}

func (l *kindLevel) shrink() {
	l.sum, l.n, l.v2 = l.sum*kindKeep, l.n*kindKeep, l.v2*kindKeep*kindKeep
}

// mixVar returns the variance the kinds' levels add to a statistic of a
// round trip whose measured samples are a share plain of plain calls,
// judged against the baseline: its streams read their level's error and
// its plain calls the plain level's (through the offset), and the
// baseline, measured on the learners' own samples, reads neither. A
// heavy-tailed plain call's level is the noisy one: lesson 07's start-up
// learns it from 39 plain calls (standard errors of 0.06–0.10 s in four
// traced runs), and a round trip of P0's plain calls only compares that
// error with its own. 0 until the offset is known.
func (a *adaptive) mixVar(plain float64) float64 {
	if !a.kindKnown {
		return 0
	}
	lv := &a.kindLevels
	return (1-plain)*(1-plain)*lv[0].variance() + plain*plain*lv[1].variance()
}

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
	fresh    bool // the backend changed: its levels replace the pooled ones
}

// learnKinds measures the kinds' levels on co's tickets [lo, hi), which
// found no queue, once they are all back (see kindLearner), and pools
// them; fresh (the backend changed) replaces the pooled levels instead. A
// learner still waiting is judged with what it has (its missing requests
// counted as the slowest plain calls).
func (a *adaptive) learnKinds(co *cohort, lo, hi int, fresh bool) {
	if a.kinds.active {
		a.finishKinds()
	}
	k := &a.kinds
	k.active, k.from, k.to, k.got, k.fresh = true, co.from+uint64(lo), co.from+uint64(hi), 0, fresh
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

// finishKinds pools the learner's levels and applies the offset to every
// cohort awaiting its requests and to the baseline's pool. A fresh
// learner (or the first) needs both kinds, minKind samples each, and
// replaces the levels; a later one adds the kinds it has minKind of (a
// level measured alone is still the backend's: the probe it came from
// read at the baseline). Otherwise nothing changes.
func (a *adaptive) finishKinds() {
	k := &a.kinds
	k.active = false
	n := int(k.to - k.from)
	buf := a.scratch[1].sorted[:]
	keep := a.cfg.keep()
	streams, ses, ns := kindStat(k.lat[:n], k.plain[:n], false, keep, buf)
	plains, sep, np := kindStat(k.lat[:n], k.plain[:n], true, keep, buf)
	lv := &a.kindLevels
	switch {
	case k.fresh || !a.kindKnown:
		if ns < minKind || np < minKind {
			return
		}
		lv[0], lv[1] = kindLevel{}, kindLevel{}
	case ns < minKind && np < minKind:
		return
	default:
		lv[0].shrink()
		lv[1].shrink()
	}
	if ns >= minKind {
		lv[0].add(streams, ses, ns)
	}
	if np >= minKind {
		lv[1].add(plains, sep, np)
	}
	off := lv[1].mean() - lv[0].mean()
	changed := !a.kindKnown || off != a.kindOff
	a.kindOff, a.kindKnown = off, true
	for i := 0; i < a.ring.count; i++ {
		a.ring.c[(a.ring.head+i)%numCohorts].off = off
	}
	if changed && a.pool.n > 0 {
		a.repoolBase()
	}
}

// kindStat returns the mean of the fastest keep share of one kind's
// measured samples (as recorded, not offset), its standard error and
// their count; zeros when fewer than minKind or than that share are back;
// buf is scratch. Samples not back (NaN) count as plain calls slower than
// all (a stream's first token comes early).
func kindStat(lat []float64, plain []bool, wantPlain bool, keep float64, buf []float64) (mean, se float64, n int) {
	pending := 0
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
	if n < minKind || max(1, int(keep*float64(n+pending)+0.5)) > n {
		return 0, 0, 0
	}
	mean, sw, div, _, _ := trimmedMean(buf[:n], pending, keep)
	if div > 0 {
		se = sw / div
	}
	return mean, se, n
}
