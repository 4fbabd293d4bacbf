package load

import (
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
	var n uint64
	t := time.Duration(0)
	for {
		t += a.gap(rate)
		if t > elapsed {
			return n
		}
		n++
	}
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
