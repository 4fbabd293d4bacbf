package load

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// expectedArrivals counts the arrivals a seeded process intends within
// elapsed at a fixed rate, its end included (on a fake clock the scheduler
// sends the arrival due at the very end before the run is cancelled): the
// schedule is deterministic, so the generator must offer exactly this many
// however slow the machine is (late arrivals are sent late, never skipped).
func expectedArrivals(kind string, seed int64, rate float64, elapsed time.Duration) uint64 {
	a := newArrivals(kind, seed)
	start := time.Unix(0, 0)
	var n uint64
	for at := a.first(start, rate); !at.After(start.Add(elapsed)); at = a.next(at, rate) {
		n++
	}
	return n
}

func TestScheduleIsExact(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "pong") }))
	defer srv.Close()
	for _, tc := range []struct {
		arrival string
		seed    int64
		rate    float64
	}{
		{ArrivalConstant, 1, 500},
		{ArrivalPoisson, 1, 500},
		{ArrivalPoisson, 99, 800},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.arrival, tc.seed), func(t *testing.T) {
			cfg := allRoutesConfig(srv.URL)
			cfg.Mix.Routes = map[string]float64{"standard": 1}
			cfg.Arrival, cfg.Seed = tc.arrival, tc.seed
			cfg.MaxOutstanding = 100000
			fc := clockwork.NewFakeClock()
			g, err := New(cfg, WithClock(fc))
			if err != nil {
				t.Fatal(err)
			}
			runFor(t, g, fc, tc.rate, 600*time.Millisecond)
			tot := g.Totals()
			want := expectedArrivals(tc.arrival, tc.seed, tc.rate, tot.Elapsed)
			if tot.Offered != want {
				t.Errorf("offered %d in %v, the seeded schedule has %d", tot.Offered, tot.Elapsed, want)
			}
			if tot.Unaccounted() != 0 {
				t.Errorf("unaccounted %d", tot.Unaccounted())
			}
			if tot.Elapsed != 600*time.Millisecond {
				t.Errorf("elapsed %v on the fake clock, want 600ms", tot.Elapsed)
			}
			// Loose: a Poisson count over 0.6 s varies by a few percent.
			if rel := math.Abs(tot.AchievedRPS-tc.rate) / tc.rate; rel > 0.15 {
				t.Errorf("achieved %.1f/s for %.0f/s", tot.AchievedRPS, tc.rate)
			}
		})
	}
}

// A tiny rate's gap does not fit in a Duration: it saturates (no arrival
// before any end) instead of overflowing into a negative gap, which put
// every arrival in the past and flooded the target forever.
func TestTinyRateGapSaturates(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		kind      string
		rate      float64
		saturated bool // every gap is the largest Duration, else ≥ 0
	}{
		{ArrivalConstant, 1e-11, true},
		{ArrivalConstant, 1e-300, true},
		{ArrivalConstant, math.SmallestNonzeroFloat64, true},
		{ArrivalPoisson, 1e-11, false}, // a short draw still fits
		{ArrivalPoisson, 1e-300, true},
		{ArrivalPoisson, math.SmallestNonzeroFloat64, true},
	} {
		a := newArrivals(tc.kind, 1)
		prev := a.first(start, tc.rate)
		if tc.kind == ArrivalConstant {
			if !prev.Equal(start) {
				t.Fatalf("constant first arrival %v after the start", prev.Sub(start))
			}
		} else {
			prev = start
		}
		for range 1000 {
			next := a.next(prev, tc.rate)
			g := next.Sub(prev)
			if g < 0 || tc.saturated && next.Before(start.Add(100*365*24*time.Hour)) {
				t.Fatalf("%s gap at rate %g = %v, want no arrival for a century", tc.kind, tc.rate, g)
			}
		}
	}
}

// A tiny accepted rate over a short run offers at most the arrival at the
// start (constant arrivals) and the run returns, whether it was set before
// the run or mid-run by SetRate.
func TestTinyRateEnds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "pong") }))
	defer srv.Close()
	for _, tc := range []struct {
		arrival   string
		before    float64 // rate for the first 50 ms
		wantFirst uint64  // arrivals in the first 50 ms
	}{
		{ArrivalConstant, 1e-11, 1}, // the arrival at the start
		{ArrivalPoisson, 1e-11, 0},
		{ArrivalConstant, 100, 6}, // 0, 10, …, 50 ms
	} {
		t.Run(fmt.Sprintf("%s-%g", tc.arrival, tc.before), func(t *testing.T) {
			cfg := allRoutesConfig(srv.URL)
			cfg.Mix.Routes = map[string]float64{"standard": 1}
			cfg.Arrival = tc.arrival
			cfg.MaxOutstanding = 4
			fc := clockwork.NewFakeClock()
			g, err := New(cfg, WithClock(fc))
			if err != nil {
				t.Fatal(err)
			}
			if err := g.SetRate(tc.before); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stop := startRun(t, g, ctx)
			advance(t, fc, 50*time.Millisecond)
			if err := g.SetRate(1e-11); err != nil {
				t.Fatal(err)
			}
			waitWoken(t, g)
			advance(t, fc, 50*time.Millisecond)
			cancel()
			stop()
			tot := g.Totals()
			if tot.Offered != tc.wantFirst || tot.Unaccounted() != 0 {
				t.Errorf("offered %d (outcomes %v), want %d", tot.Offered, tot.Outcomes, tc.wantFirst)
			}
		})
	}
}
