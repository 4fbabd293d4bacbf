package load

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Over a seeded run the Poisson process's mean gap is 1/rate, its gaps vary
// as an exponential's do, and the same seed gives the same schedule.
func TestPoissonArrivals(t *testing.T) {
	const rate, n = 2000.0, 200000
	a := newArrivals(ArrivalPoisson, 42).(poissonArrivals)
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
	b := newArrivals(ArrivalPoisson, 42).(poissonArrivals)
	for i, want := range first {
		if got := b.gap(rate); got != want {
			t.Fatalf("same seed, gap %d: %v then %v", i, want, got)
		}
	}
	c := newArrivals(ArrivalPoisson, 43).(poissonArrivals)
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

// Constant arrivals lie at start + k/rate for k = 0, 1, …, so [start, end)
// holds rate×duration of them (rounded up), however the gap rounds to the
// nanosecond: summing a truncated gap drifted early and let one more in.
func TestConstantArrivals(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		rate   float64
		d      time.Duration
		want   int
		second time.Duration // the arrival after the one at start
	}{
		{10, time.Second, 10, 100 * time.Millisecond},
		{2, time.Second, 2, 500 * time.Millisecond},
		{1, time.Second, 1, time.Second},
		{3, time.Second, 3, 333333334},
		{3, 2 * time.Second, 6, 333333334},
		{7, 3 * time.Second, 21, 142857143},
		{2000, time.Second, 2000, 500 * time.Microsecond},
		{0.5, 3 * time.Second, 2, 2 * time.Second},
		{1e6, time.Second, 1e6, time.Microsecond},
	} {
		a := newArrivals(ArrivalConstant, 1)
		at := a.first(start, tc.rate)
		if !at.Equal(start) {
			t.Errorf("rate %v: first arrival %v after the start, want at it", tc.rate, at.Sub(start))
		}
		end, n := start.Add(tc.d), 0
		for ; at.Before(end); at = a.next(at, tc.rate) {
			if n == 1 && at.Sub(start) != tc.second {
				t.Errorf("rate %v: second arrival at %v, want %v", tc.rate, at.Sub(start), tc.second)
			}
			n++
		}
		if n != tc.want {
			t.Errorf("rate %v for %v: %d arrivals, want %d", tc.rate, tc.d, n, tc.want)
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

// TestMixerRoutesByPriority: a priority with its own route table draws only
// from it; the others draw from Routes.
func TestMixerRoutesByPriority(t *testing.T) {
	m := Mix{
		Priorities:       map[string]float64{"P0": 1, "P1": 1, "P2": 1},
		Keys:             map[string]string{"P0": "a", "P1": "b", "P2": "c"},
		Routes:           map[string]float64{"chat": 1, "chat-stream": 1},
		RoutesByPriority: map[string]map[string]float64{"P0": {"predict": 1}},
		PromptTokens:     [2]int{1, 2},
		MaxTokens:        8,
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	x := newMixer(m, 3)
	byPrio := [3]map[Route]int{{}, {}, {}}
	for range 9000 {
		s := x.next([]string{"t"}, 0, 0)
		byPrio[s.priority][s.route]++
	}
	if len(byPrio[0]) != 1 || byPrio[0][RoutePredict] == 0 {
		t.Errorf("P0 routes %v, want predict only", byPrio[0])
	}
	for p := 1; p < 3; p++ {
		if byPrio[p][RoutePredict] != 0 || byPrio[p][RouteChat] == 0 || byPrio[p][RouteChatStream] == 0 {
			t.Errorf("%s routes %v, want chat and chat-stream", Priorities[p], byPrio[p])
		}
	}
	for name, bad := range map[string]Mix{
		"unknown priority": {RoutesByPriority: map[string]map[string]float64{"P9": {"predict": 1}}},
		"unknown route":    {RoutesByPriority: map[string]map[string]float64{"P0": {"teleport": 1}}},
		"zero shares":      {RoutesByPriority: map[string]map[string]float64{"P0": {"predict": 0}}},
		"no max_tokens":    {RoutesByPriority: map[string]map[string]float64{"P0": {"chat": 1}}},
	} {
		bad.Priorities, bad.Keys, bad.Routes, bad.PromptTokens = m.Priorities, m.Keys, map[string]float64{"predict": 1}, m.PromptTokens
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "routes_by_priority") && name != "no max_tokens" {
			t.Errorf("%s: err %v, want a routes_by_priority error", name, err)
		}
	}
}

// arrivalsWithWakes plays the scheduler's use of a: arrivals at rate from
// start, the rate set again (to the same value) every wake, as the lab does
// every 50 ms of a ramp. It returns the arrival times within d and how
// many fell on a wake instant.
func arrivalsWithWakes(a arrivalProcess, rate float64, wake, d time.Duration) (at []time.Time, onWake int) {
	start := time.Unix(1000, 0)
	last, starting := start, true
	next := a.first(start, rate)
	end := start.Add(d)
	for w := start.Add(wake); !w.After(end); w = w.Add(wake) {
		for !next.After(w) && next.Before(end) {
			at = append(at, next)
			if next.Equal(w.Add(-wake)) && !next.Equal(start) {
				onWake++
			}
			last, starting = next, false
			next = a.next(last, rate)
		}
		next = a.rerate(last, w, rate, starting)
	}
	return at, onWake
}

// A rate set again and again leaves a Poisson process Poisson: the rate
// stays, gaps stay exponential (CV ≈ 1) and no arrival sits on the instant
// of a change. Redrawing the pending gap from the previous arrival put one
// there whenever the draw fell before it: at 20/s with a change every
// 50 ms, 29 arrivals a second, a third of them on the changes.
func TestPoissonRerateIsMemoryless(t *testing.T) {
	const rate = 20.0
	at, onWake := arrivalsWithWakes(newArrivals(ArrivalPoisson, 7), rate, 50*time.Millisecond, 200*time.Second)
	achieved := float64(len(at)) / 200
	if math.Abs(achieved-rate)/rate > 0.06 {
		t.Errorf("%.1f arrivals/s with the rate set every 50 ms, want %.0f", achieved, rate)
	}
	if onWake > 0 {
		t.Errorf("%d of %d arrivals on the instant of a rate change", onWake, len(at))
	}
	var sum, sumSq float64
	for i := 1; i < len(at); i++ {
		s := at[i].Sub(at[i-1]).Seconds()
		sum += s
		sumSq += s * s
	}
	n := float64(len(at) - 1)
	mean := sum / n
	if cv := math.Sqrt(sumSq/n-mean*mean) / mean; cv < 0.9 || cv > 1.1 {
		t.Errorf("gaps' coefficient of variation %.3f, want ≈ 1", cv)
	}
}

// Constant arrivals keep their grid through a rate set again: exactly
// rate×d arrivals.
func TestConstantRerateKeepsGrid(t *testing.T) {
	at, _ := arrivalsWithWakes(newArrivals(ArrivalConstant, 7), 30, 50*time.Millisecond, 10*time.Second)
	if len(at) != 300 {
		t.Errorf("%d arrivals in 10 s at 30/s with the rate set every 50 ms, want 300", len(at))
	}
}
