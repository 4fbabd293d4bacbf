package load

import (
	"math"
	"testing"
	"time"
)

// Over a seeded run the Poisson process's mean gap is 1/rate, its gaps vary
// as an exponential's do, and the same seed gives the same schedule.
func TestPoissonArrivals(t *testing.T) {
	const rate, n = 2000.0, 200000
	a := newArrivals(ArrivalPoisson, 42)
	var sum, sumSq float64
	first := make([]time.Duration, 10)
	for i := range n {
		g := a.gap(rate)
		if g < 0 {
			t.Fatalf("negative gap %v", g)
		}
		if i < len(first) {
			first[i] = g
		}
		s := g.Seconds()
		sum += s
		sumSq += s * s
	}
	mean := sum / n
	achieved := 1 / mean
	if math.Abs(achieved-rate)/rate > 0.01 {
		t.Errorf("mean rate over %d arrivals = %.1f/s, want %.0f ± 1%%", n, achieved, rate)
	}
	// Exponential: standard deviation equals the mean (coefficient of variation 1).
	sd := math.Sqrt(sumSq/n - mean*mean)
	if cv := sd / mean; cv < 0.95 || cv > 1.05 {
		t.Errorf("coefficient of variation %.3f, want ≈ 1 for exponential gaps", cv)
	}
	b := newArrivals(ArrivalPoisson, 42)
	for i, want := range first {
		if got := b.gap(rate); got != want {
			t.Fatalf("same seed, gap %d: %v then %v", i, want, got)
		}
	}
	c := newArrivals(ArrivalPoisson, 43)
	same := 0
	for _, want := range first {
		if c.gap(rate) == want {
			same++
		}
	}
	if same == len(first) {
		t.Error("different seeds gave the same schedule")
	}
}

func TestConstantArrivals(t *testing.T) {
	a := newArrivals(ArrivalConstant, 1)
	for _, tc := range []struct {
		rate float64
		want time.Duration
	}{{2000, 500 * time.Microsecond}, {1, time.Second}, {3, 333333333}} {
		if got := a.gap(tc.rate); got != tc.want {
			t.Errorf("gap(%v) = %v, want %v", tc.rate, got, tc.want)
		}
	}
}

// The mix draws follow the shares and the round robin visits every target.
func TestMixerShares(t *testing.T) {
	m := Mix{
		Priorities:   map[string]float64{"P0": 1, "P1": 3, "P2": 6},
		Keys:         map[string]string{"P0": "a", "P1": "b", "P2": "c"},
		Routes:       map[string]float64{"chat": 1, "export": 1, "standard": 0},
		PromptTokens: [2]int{5, 9},
		MaxTokens:    8,
	}
	x := newMixer(m, 7)
	targets := []string{"t0", "t1", "t2"}
	const n = 30000
	var prio [3]int
	routes := map[Route]int{}
	perTarget := map[string]int{}
	for range n {
		s := x.next(targets, 0, 0)
		prio[s.priority]++
		routes[s.route]++
		perTarget[s.target]++
		if s.tokens < 5 || s.tokens > 9 {
			t.Fatalf("tokens %d outside [5, 9]", s.tokens)
		}
		if want := m.Keys[Priorities[s.priority]]; s.key != want {
			t.Fatalf("priority %s sent key %q", Priorities[s.priority], s.key)
		}
		if s.slowBps != 0 {
			t.Fatal("slow reader with share 0")
		}
	}
	for i, want := range []float64{0.1, 0.3, 0.6} {
		if got := float64(prio[i]) / n; math.Abs(got-want) > 0.02 {
			t.Errorf("%s share %.3f, want %.1f", Priorities[i], got, want)
		}
	}
	if routes[RouteStandard] != 0 {
		t.Errorf("route with share 0 drawn %d times", routes[RouteStandard])
	}
	if got := float64(routes[RouteChat]) / n; math.Abs(got-0.5) > 0.02 {
		t.Errorf("chat share %.3f, want 0.5", got)
	}
	for _, tg := range targets {
		if perTarget[tg] != n/3 {
			t.Errorf("target %s got %d, want %d (round robin)", tg, perTarget[tg], n/3)
		}
	}
	slow := 0
	for range n {
		if s := x.next(targets, 0.25, 2); s.slowBps != 0 {
			if s.route != RouteExport && s.route != RouteChatStream {
				t.Fatalf("slow reader on route %s", s.route)
			}
			if s.slowBps != 2048 {
				t.Fatalf("slowBps = %v, want 2048", s.slowBps)
			}
			slow++
		}
	}
	// Half the draws are export; a quarter of those read slowly.
	if got := float64(slow) / n; math.Abs(got-0.125) > 0.02 {
		t.Errorf("slow share %.3f, want 0.125", got)
	}
}
