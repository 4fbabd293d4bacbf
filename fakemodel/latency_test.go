package fakemodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func samples(l Latency, n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(l.Sample(r)) / float64(time.Millisecond)
	}
	slices.Sort(out)
	return out
}

func quantile(sorted []float64, q float64) float64 {
	return sorted[int(q*float64(len(sorted)-1))]
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// TestLognormalQuantiles is the acceptance test of the sampler: p50 and p99
// of 20k samples within 5 % of the configured values.
func TestLognormalQuantiles(t *testing.T) {
	cases := []Latency{
		{Dist: DistLognormal, P50Ms: 200, P99Ms: 600},
		{Dist: DistLognormal, P50Ms: 1000, P99Ms: 1500}, // seed 000's figures
		{Dist: DistLognormal, P50Ms: 50, P99Ms: 2000},
		{Dist: DistLognormal, P50Ms: 80, P99Ms: 80}, // sigma 0: constant
	}
	for _, l := range cases {
		for _, seed := range []uint64{1, 2, 3} {
			s := samples(l, 20000, seed)
			p50, p99 := quantile(s, 0.50), quantile(s, 0.99)
			if math.Abs(p50/l.P50Ms-1) > 0.05 || math.Abs(p99/l.P99Ms-1) > 0.05 {
				t.Errorf("%+v seed %d: p50 %.1f p99 %.1f, want within 5%% of %.0f/%.0f", l, seed, p50, p99, l.P50Ms, l.P99Ms)
			}
			if m := mean(s); math.Abs(m/l.MeanMs()-1) > 0.05 {
				t.Errorf("%+v seed %d: sample mean %.1f, MeanMs %.1f", l, seed, m, l.MeanMs())
			}
		}
	}
}

func TestFixedAndUniform(t *testing.T) {
	f := Latency{Dist: DistFixed, FixedMs: 42}
	if d := f.Sample(nil); d != 42*time.Millisecond {
		t.Fatalf("fixed sample %v", d)
	}
	u := Latency{Dist: DistUniform, MinMs: 100, MaxMs: 300}
	s := samples(u, 20000, 7)
	if s[0] < 100 || s[len(s)-1] > 300 {
		t.Fatalf("uniform out of bounds: %.1f..%.1f", s[0], s[len(s)-1])
	}
	if m := mean(s); math.Abs(m-u.MeanMs()) > 3 {
		t.Fatalf("uniform mean %.1f, want %.1f", m, u.MeanMs())
	}
	if p50 := quantile(s, 0.5); math.Abs(p50-200) > 5 {
		t.Fatalf("uniform p50 %.1f, want ≈ 200", p50)
	}
}

// TestMeanMsMatchesSample: MeanMs is the mean of what Sample draws — the
// lognormal capped at 600 s included — within four standard errors of a
// fixed-seed Monte-Carlo mean. Wide lognormals put a share of their draws
// on the cap, where the uncapped exp(mu + sigma²/2) is far off (p50 1 ms,
// p99 600 s: 12,663 s against ≈ 10.6 s) or infinite.
func TestMeanMsMatchesSample(t *testing.T) {
	const n = 200_000
	cases := []struct {
		name string
		l    Latency
	}{
		{"defaults", Latency{Dist: DistLognormal, P50Ms: 200, P99Ms: 600}},
		{"wide tail", Latency{Dist: DistLognormal, P50Ms: 50, P99Ms: 2000}},
		{"p99 at the cap", Latency{Dist: DistLognormal, P50Ms: 1, P99Ms: maxMs}},
		{"tiny p50", Latency{Dist: DistLognormal, P50Ms: 0.000001, P99Ms: maxMs}},
		{"smallest p50", Latency{Dist: DistLognormal, P50Ms: math.SmallestNonzeroFloat64, P99Ms: maxMs}},
		{"sigma 0", Latency{Dist: DistLognormal, P50Ms: 80, P99Ms: 80}},
		{"sigma 0 at the cap", Latency{Dist: DistLognormal, P50Ms: maxMs, P99Ms: maxMs}},
		{"fixed at the cap", Latency{Dist: DistFixed, FixedMs: maxMs, P50Ms: 1, P99Ms: 1}},
		{"uniform to the cap", Latency{Dist: DistUniform, MinMs: 0, MaxMs: maxMs, P50Ms: 1, P99Ms: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.l.validate(); err != nil {
				t.Fatalf("case is not a valid knob: %v", err)
			}
			s := samples(tc.l, n, 11)
			m := mean(s)
			v := 0.0
			for _, x := range s {
				v += (x - m) * (x - m)
			}
			se := math.Sqrt(v / float64(n-1) / n)
			got := tc.l.MeanMs()
			if math.IsNaN(got) || got < 0 || got > maxMs {
				t.Fatalf("MeanMs %g: want a mean within [0, %d]", got, maxMs)
			}
			t.Logf("MeanMs %.6g, Monte-Carlo mean of %d draws %.6g ± %.3g", got, n, m, se)
			if tol := 4*se + 2e-6; math.Abs(got-m) > tol { // 2e-6 ms: Sample truncates to whole ns
				t.Errorf("MeanMs %.6g, Monte-Carlo mean %.6g ± %.3g (se), off by %.3g > %.3g", got, m, se, got-m, tol)
			}
		})
	}
}

// TestMeanServiceSaturates: MeanService never overflows into a negative
// time, and msDuration saturates every float at the Duration range.
func TestMeanServiceSaturates(t *testing.T) {
	k := DefaultKnobs()
	k.Latency.P50Ms, k.Latency.P99Ms = 0.000001, maxMs
	k.LatencyMultiplier, k.LatencyAddMs = 100, maxMs
	if d := k.MeanService(); d <= 0 || d > 101*maxMs*time.Millisecond {
		t.Errorf("MeanService %v: want within (0, %v]", d, 101*maxMs*time.Millisecond)
	}
	for _, tc := range []struct {
		ms   float64
		want time.Duration
	}{
		{1.5, 1500 * time.Microsecond},
		{0, 0},
		{-1, 0},
		{math.NaN(), 0},
		{math.Inf(-1), 0},
		{1e13, math.MaxInt64},
		{math.MaxInt64 / 1e6, math.MaxInt64},
		{math.Inf(1), math.MaxInt64},
	} {
		if got := msDuration(tc.ms); got != tc.want {
			t.Errorf("msDuration(%g) = %d, want %d", tc.ms, got, tc.want)
		}
	}
}
