package admit

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// kindsStartUp runs a start-up cohort of limit tickets below the capacity
// (no queue): every other ticket a stream whose first token takes ttft,
// the rest plain calls of lognormal length around plain (σ 0.6). A plain
// sample comes back in the order of its end, as the limiter would see it
// (the cohort is judged when its fastest half is back); with ttft 0 every
// ticket is a plain call. It returns the limiter.
func kindsStartUp(t *testing.T, limit int, ttft, plain float64, seed uint64) *adaptive {
	t.Helper()
	a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: limit, Max: 8 * limit})
	rng := rand.New(rand.NewPCG(seed, 1))
	tickets := make([]uint64, limit)
	for i := range tickets {
		tickets[i] = a.Ticket()
	}
	type done struct {
		at     float64
		ticket uint64
		infl   int
		stream bool
		lat    float64
	}
	var ends []done
	for i, tk := range tickets {
		if i%2 == 0 && ttft > 0 {
			ends = append(ends, done{ttft * (1 + 0.05*rng.NormFloat64()), tk, i + 1, true, 0})
			continue
		}
		l := plain * math.Exp(0.6*rng.NormFloat64()-0.18)
		ends = append(ends, done{l, tk, i + 1, false, l})
	}
	// In order of their ends, as the limiter would see them.
	slices.SortFunc(ends, func(x, y done) int { return cmp.Compare(x.at, y.at) })
	start := clk.t
	for _, d := range ends {
		clk.t = start.Add(time.Duration(d.at * 1e9))
		if d.stream {
			a.OnLatency(d.ticket, d.infl, time.Duration(d.at*1e9))
		} else {
			a.OnSample(Sample{RTT: time.Duration(d.lat * 1e9), Inflight: d.infl, Ticket: d.ticket})
		}
	}
	if !a.started {
		t.Fatal("the start-up cohort was not judged")
	}
	return a
}

// TestKindsOffsetAtStartUp: the start-up measures how much longer a plain
// call reads than a stream's first token with no queue, although its
// cohort is judged long before the slow plain calls are back (they would
// read the plain calls fast) — and only with both kinds.
func TestKindsOffsetAtStartUp(t *testing.T) {
	const ttft, plain = 0.4, 0.85
	truth := kindsTruth(ttft, plain)
	var sum float64
	const seeds = 8
	for seed := range uint64(seeds) {
		a := kindsStartUp(t, 512, ttft, plain, seed+1)
		if !a.kindKnown {
			t.Fatalf("seed %d: no offset after a start-up of both kinds", seed+1)
		}
		sum += a.kindOff
	}
	if got := sum / seeds; math.Abs(got-truth) > 0.25*truth {
		t.Fatalf("mean offset %.3f s over %d seeds, want %.3f s ± 25 %%", got, seeds, truth)
	}
	t.Run("streams only", func(t *testing.T) {
		a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: 64})
		for i := range 64 {
			tk := a.Ticket()
			clk.add(time.Millisecond)
			a.OnLatency(tk, i+1, time.Duration(ttft*1e9))
		}
		if a.kindKnown || a.kindOff != 0 {
			t.Fatalf("an offset (%v, %v) with one kind", a.kindKnown, a.kindOff)
		}
	})
}

// TestKindsReadAlike: after a start-up of both kinds, a round trip of
// plain calls only (P0's, say, served first) reads at the baseline, not
// the plain calls' longer no-queue latency: the mix is not a queue.
func TestKindsReadAlike(t *testing.T) {
	const ttft, plain = 0.4, 0.85
	a := kindsStartUp(t, 256, ttft, plain, 7)
	rng := rand.New(rand.NewPCG(8, 1))
	var co cohort
	co.reset(0, 128, cohortRound)
	co.off = a.kindOff
	for i := range co.size() {
		co.lat[i] = plain * math.Exp(0.6*rng.NormFloat64()-0.18)
		co.plain[i], co.infl[i] = true, 100
	}
	var w window
	w.add(&co)
	s := w.stats(a.cfg.keep(), 0)
	if d := s.stat - a.base; math.Abs(d) > 3*math.Hypot(s.se, math.Sqrt(a.baseVar))+0.02 {
		t.Fatalf("plain calls with no queue read %.3f s against the baseline %.3f s (offset %.3f)", s.stat, a.base, a.kindOff)
	}
	// Without the offset they would read as a queue.
	co.off = 0
	w.reset()
	w.add(&co)
	if s := w.stats(a.cfg.keep(), 0); s.stat-a.base < 0.1 {
		t.Fatalf("the test's plain calls read %.3f s without the offset, too close to the baseline %.3f s to test anything", s.stat, a.base)
	}
}

// plainCohort returns a cohort of n plain calls with no queue, all back:
// lognormal lengths around plain (σ 0.6), as kindsStartUp draws them.
func plainCohort(from uint64, n int, plain float64, rng *rand.Rand) *cohort {
	co := new(cohort)
	co.reset(from, from+uint64(n), cohortProbe)
	for i := range n {
		co.lat[i] = plain * math.Exp(0.6*rng.NormFloat64()-0.18)
		co.plain[i], co.infl[i] = true, int32(i+1)
		co.got++
		co.n++
	}
	return co
}

// kindsTruth returns the offset the kinds' levels converge to: the plain
// calls' fastest-half mean less the streams'.
func kindsTruth(ttft, plain float64) float64 {
	rng := rand.New(rand.NewPCG(99, 1))
	ps, ss := make([]float64, 100000), make([]float64, 100000)
	for i := range ps {
		ps[i] = plain * math.Exp(0.6*rng.NormFloat64()-0.18)
		ss[i] = ttft * (1 + 0.05*rng.NormFloat64())
	}
	mp, _, _, _, _ := trimmedMean(ps, 0, 0.5)
	ms, _, _, _, _ := trimmedMean(ss, 0, 0.5)
	return mp - ms
}

// TestKindsPoolLearners: the offset pools every learner — probes of plain
// calls only too (P0's, served first while the limit is low) — so its
// error shrinks as probes come back, where one learner's would stay. In
// lesson 07 the start-up's 39 plain calls measured 0.11 and 0.30 s in two
// runs around a truth near 0.17 s, and a later round trip of P0's plain
// calls read the error as a queue.
func TestKindsPoolLearners(t *testing.T) {
	const ttft, plain = 0.4, 0.85
	truth := kindsTruth(ttft, plain)
	const seeds = 40
	var before, after float64 // squared errors
	for seed := range uint64(seeds) {
		a := kindsStartUp(t, 288, ttft, plain, seed+1) // lesson 07: 72 tickets below the capacity
		before += (a.kindOff - truth) * (a.kindOff - truth)
		rng := rand.New(rand.NewPCG(seed+1, 2))
		for p := range 2 {
			a.learnKinds(plainCohort(uint64(1000+100*p), 62, plain, rng), 0, 62, false)
		}
		if a.kinds.active {
			t.Fatal("a learner with every sample back is still waiting")
		}
		after += (a.kindOff - truth) * (a.kindOff - truth)
	}
	rb, ra := math.Sqrt(before/seeds), math.Sqrt(after/seeds)
	t.Logf("offset rms error: start-up %.4f s, after two probes of plain calls %.4f s (truth %.3f s)", rb, ra, truth)
	if ra > 0.7*rb {
		t.Fatalf("two probes of 62 plain calls left the offset's rms error at %.4f s, %.0f %% of the start-up's %.4f s (want at most 70 %%)", ra, 100*ra/rb, rb)
	}

	t.Run("fresh needs both kinds", func(t *testing.T) {
		a := kindsStartUp(t, 288, ttft, plain, 3)
		off := a.kindOff
		rng := rand.New(rand.NewPCG(3, 3))
		a.learnKinds(plainCohort(1000, 62, 2*plain, rng), 0, 62, true)
		if a.kindOff != off {
			t.Fatalf("a fresh learner of plain calls only moved the offset %.3f → %.3f s: the streams' level it would pair with is the old backend's", off, a.kindOff)
		}
	})
	t.Run("too few", func(t *testing.T) {
		a := kindsStartUp(t, 288, ttft, plain, 4)
		off := a.kindOff
		rng := rand.New(rand.NewPCG(4, 3))
		a.learnKinds(plainCohort(1000, minKind-1, 2*plain, rng), 0, minKind-1, false)
		if a.kindOff != off {
			t.Fatalf("%d plain calls moved the offset %.3f → %.3f s", minKind-1, off, a.kindOff)
		}
	})
}

// TestKindsBaselineFollowsOffset: the baseline's pool keeps plain calls'
// round trips as measured, so when the offset moves, the baseline moves
// with it (a pool of plain calls only by the whole step) instead of
// holding samples offset by an old error.
func TestKindsBaselineFollowsOffset(t *testing.T) {
	const ttft, plain = 0.4, 0.85
	a := kindsStartUp(t, 288, ttft, plain, 5)
	rng := rand.New(rand.NewPCG(5, 2))
	a.pool.reset()
	a.pool.add(plainCohort(1000, 62, plain, rng), a.cfg.keep())
	a.poolBase()
	base, off := a.base, a.kindOff
	// A probe's learner whose plain calls are shorter moves the offset.
	a.learnKinds(plainCohort(2000, 62, 0.7*plain, rng), 0, 62, false)
	d := a.kindOff - off
	if d > -0.01 {
		t.Fatalf("the learner moved the offset by %.4f s; the test needs a clear step down", d)
	}
	if got := a.base - base; math.Abs(got+d) > 1e-9 {
		t.Fatalf("the offset moved %.4f s and the baseline of plain calls only %.4f s; want %.4f s", d, got, -d)
	}
}

// TestKindsUrgentProbeNoise: an urgent probe (after a cut that did not
// lower the latency as a queue would) of plain calls only — P0's, served
// first — compares its plain calls with the plain level the start-up
// learned from 39 heavy-tailed ones, so the level's error is part of the
// comparison: judged by the baseline's variance alone, the probe read
// "slower backend" on an unchanged one in 23 of 200 start-ups and the
// limit returned above the capacity (lesson 07, traced: 0.52 s against a
// 0.37 s baseline, limit restored to 95 over 72 slots). A backend really
// twice slower is still found every time.
func TestKindsUrgentProbeNoise(t *testing.T) {
	const ttft, plain, seeds = 0.4, 0.85, 200
	verdicts := func(factor float64) int {
		slower := 0
		for seed := range uint64(seeds) {
			a := kindsStartUp(t, 288, ttft, plain, seed+1) // lesson 07: 39 plain calls below the capacity
			a.cfg.Max = 100 * 288                          // room for the return: the start-up's jump took the estimate to 4 × 288
			rng := rand.New(rand.NewPCG(seed+1, 5))
			co := plainCohort(1000, 61, factor*plain, rng)
			co.off = a.kindOff
			a.probe, a.restore = prober{urgent: true}, 10*a.est
			est := a.est
			a.endProbe(co)
			if a.est > 2*est {
				slower++ // the limit returned toward restore
			}
		}
		return slower
	}
	tests := []struct {
		name   string
		factor float64
		lo, hi int // slower verdicts allowed, of seeds
	}{
		{"unchanged backend", 1, 0, seeds / 25},
		{"twice slower", 2, seeds - seeds/50, seeds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := verdicts(tt.factor); got < tt.lo || got > tt.hi {
				t.Fatalf("%d of %d urgent probes of plain calls ×%.0f read a slower backend, want %d to %d", got, seeds, tt.factor, tt.lo, tt.hi)
			}
		})
	}
}
