package load

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAchievedRate offers 2,000 req/s for 2 s to a trivial loopback server
// and prints target vs achieved rate (the goal is within 1 %; `levee
// loadtest` prints the same figure over 5 s). Only the accounting is
// asserted: the machine is shared, so the figure is reported, not enforced.
// It runs under the race detector too, as CI runs every test (the client
// keeps 2,000 req/s there as well).
func TestAchievedRate(t *testing.T) {
	if testing.Short() {
		t.Skip("2 s of load")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()
	cfg := allRoutesConfig(srv.URL)
	cfg.Mix.Routes = map[string]float64{"standard": 1}
	cfg.Arrival = ArrivalConstant
	cfg.MaxOutstanding = 10000
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const target = 2000.0
	runFor(t, g, nil, target, 2*time.Second)
	tot := g.Totals()
	t.Logf("target %.0f req/s, achieved %.1f req/s, error %.3f %%, offered %d in %v, outcomes %v, p99 %.2f ms",
		target, tot.AchievedRPS, 100*math.Abs(tot.AchievedRPS-target)/target, tot.Offered, tot.Elapsed,
		tot.Outcomes, float64(tot.Admitted.ValueAtQuantile(99))/1000)
	if tot.Unaccounted() != 0 {
		t.Errorf("unaccounted %d", tot.Unaccounted())
	}
	if tot.Offered == 0 {
		t.Fatal("nothing offered")
	}
}
