package admit

import (
	"math"
	"slices"
)

// windowStats summarises a conclusive window for a step.
type windowStats struct {
	n        int     // measured samples
	drops    int     // dropped samples
	inflight float64 // mean in flight at the grant of its requests
	stat     float64 // the fastest share's mean latency, seconds
	se       float64 // its standard error, seconds
	x        float64 // throughput, requests/s
	queue    float64 // estimated requests waiting at the backend (may be < 0: noise)
	queueSE  float64 // the queue estimate's standard error, requests: √(winSE² + baseSE²)
	winSE    float64 // the part from this window's own noise (independent between windows)
	baseSE   float64 // the part from the baseline's (common to every window until it changes)
	target   float64 // the queue to keep at the backend, requests
	used     bool    // some request saw the limit full
	framed   bool    // queue is measured from the last window's statistic, not the baseline (see adaptive.queueBase)
	censored bool    // the queue estimate exceeded its bound, inflight − x·base (see estimate)
	cohorts  int     // cohorts pooled (half round trips: see cohortShare)
	cut      float64 // the slowest latency the statistic keeps, seconds
	sw       float64 // the samples' winsorized standard deviation, seconds
	div      float64 // se = sw / div
}

// congested reports whether the queue is significantly above the target.
func (s *windowStats) congested() bool {
	return s.queue > s.target+congestionZ*s.queueSE
}

// visible reports whether the window shows a queue at all.
func (s *windowStats) visible() bool { return s.queue > visibleZ*s.queueSE }

// window pools the samples of consecutive cohorts.
type window struct {
	lat     [maxWindow]float64 // latency signal, seconds; dropped samples are +Inf
	infl    [maxWindow]int32   // in flight at each sample's grant
	sorted  [maxWindow]float64 // scratch for the statistic
	n       int                // measured samples
	pending int                // tickets not back when their cohort was judged (its slowest)
	drops   int
	maxInfl int
	cohorts int // cohorts pooled
}

// add pools a cohort's samples.
func (w *window) add(co *cohort) { w.addRange(co, 0, co.size()) }

// addRange pools the samples of a cohort's tickets [lo, hi) (offsets);
// those not back yet count as pending (the slowest).
func (w *window) addRange(co *cohort, lo, hi int) {
	for i := lo; i < hi; i++ {
		v := co.value(i)
		switch {
		case math.IsNaN(v):
			w.pending++
		case v == unmeasured:
		case w.n < maxWindow:
			w.lat[w.n], w.infl[w.n] = v, co.infl[i]
			w.n++
			if math.IsInf(v, 1) {
				w.drops++
			}
		}
	}
	w.maxInfl = max(w.maxInfl, co.maxInfl)
}

// stats summarises the window; lim is the limit it ran under. Its
// concurrency is the mean in flight of the samples its statistic keeps:
// where the concurrency varied (the start-up ramp, a cut), the fastest
// requests are also the ones that started with the fewest in front.
func (w *window) stats(keep float64, lim int) windowStats {
	s := windowStats{n: w.n, drops: w.drops, used: w.maxInfl >= lim, cohorts: w.cohorts}
	if w.n == 0 {
		return s
	}
	copy(w.sorted[:w.n], w.lat[:w.n])
	var k int
	s.stat, s.sw, s.div, s.cut, k = trimmedMean(w.sorted[:w.n], w.pending, keep)
	if s.div > 0 {
		s.se = s.sw / s.div
	}
	var sum float64
	taken := 0
	for i := 0; i < w.n && taken < k; i++ {
		if w.lat[i] < s.cut {
			sum += float64(w.infl[i])
			taken++
		}
	}
	for i := 0; i < w.n && taken < k; i++ {
		if w.lat[i] == s.cut {
			sum += float64(w.infl[i])
			taken++
		}
	}
	if taken > 0 {
		s.inflight = sum / float64(taken)
	}
	return s
}

func (w *window) reset() {
	w.n, w.pending, w.drops, w.maxInfl, w.cohorts = 0, 0, 0, 0, 0
}

// trimmedMean sorts xs and returns the mean of the fastest keep share of
// xs and pending more samples known to be slower than all of xs, the
// samples' winsorized standard deviation sw (the slower samples count at
// the cut) and div: the mean's standard error is sw / div (the influence
// function of a one-sided trimmed mean is min(x, cut)/keep); cut is the
// slowest sample kept, k the samples kept.
func trimmedMean(xs []float64, pending int, keep float64) (mean, sw, div, cut float64, k int) {
	n := len(xs)
	if n == 0 {
		return 0, 0, 0, 0, 0
	}
	slices.Sort(xs)
	total := n + pending
	k = min(max(1, int(keep*float64(total)+0.5)), n)
	cut = xs[k-1]
	if math.IsInf(cut, 1) {
		return math.Inf(1), 0, 0, cut, k
	}
	var sum float64
	for _, x := range xs[:k] {
		sum += x
	}
	mean = sum / float64(k)
	wm := (sum + float64(total-k)*cut) / float64(total)
	var v float64
	for _, x := range xs[:k] {
		v += (x - wm) * (x - wm)
	}
	v += float64(total-k) * (cut - wm) * (cut - wm)
	v /= float64(max(total-1, 1))
	frac := float64(k) / float64(total)
	return mean, math.Sqrt(v), frac * math.Sqrt(float64(total)), cut, k
}

func clampF(v float64, lo, hi int) float64 {
	return math.Max(float64(lo), math.Min(float64(hi), v))
}

// estimator is implemented by the adaptive limiters (for tests and stats).
type estimator interface {
	estimateLimit() (est float64, probing bool)
}
