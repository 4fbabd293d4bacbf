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
