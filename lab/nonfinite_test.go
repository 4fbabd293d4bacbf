package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/sampler"
	"github.com/levee-lab/levee/lab/scrape"
)

// A NaN or ±Inf in a child's /metrics costs that one series, not the
// tick's Sample: the gauge is left out, the counter keeps its previous
// value (its growth shows at the next scrape instead of its whole count
// read as new), the other series are kept, and the Sample still encodes
// as a line of samples.jsonl. The NaN used to reach the Sample, whose
// JSON encoding then failed: the recorder dropped the whole line.
func TestNonFiniteMetricKeepsTheSample(t *testing.T) {
	var bad atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight, shed, limit := "7", "100", "12"
		if bad.Load() {
			inflight, shed = "NaN", "+Inf"
		}
		if r.URL.Query().Get("after") != "" {
			shed = "140"
		}
		fmt.Fprintf(w, "# TYPE levee_shed_total counter\nlevee_shed_total{reason=\"overload\",priority=\"P2\"} %s\n"+
			"# TYPE levee_inflight gauge\nlevee_inflight{class=\"ai\"} %s\n"+
			"# TYPE levee_concurrency_limit gauge\nlevee_concurrency_limit{class=\"ai\"} %s\n", shed, inflight, limit)
	}))
	defer srv.Close()
	t0 := time.Unix(100, 0)
	tick := time.Second
	sl := &scrapeSlot{}
	get := func(at time.Time, query string) (sampler.Child, []scrape.NonFinite) {
		t.Helper()
		f, err := scrape.Scrape(context.Background(), srv.Client(), srv.URL+"/metrics"+query)
		if err != nil {
			t.Fatal(err)
		}
		dropped := sl.store(f, at, 1)
		return sampler.Child{Scrape: sl.f, At: at, Starts: 1, Up: true}, dropped
	}
	next := func(st sampler.State, at time.Time, gw sampler.Child) (runfiles.Sample, sampler.State) {
		out, st := sampler.Next(st, sampler.Input{Now: at, Start: t0, Tick: tick,
			Window: load.Window{Duration: tick}, Gateways: []sampler.Child{gw}})
		return out.Sample, st
	}

	gw, _ := get(t0, "")
	_, st := next(sampler.NewState(1, 0), t0, gw)
	bad.Store(true)
	gw, dropped := get(t0.Add(tick), "")
	smp, st := next(st, t0.Add(tick), gw)
	if len(dropped) != 2 || dropped[0].Name != "levee_inflight" || dropped[0].Carried || !dropped[1].Carried {
		t.Errorf("dropped %v, want the counter carried and the gauge left out", dropped)
	}
	if _, err := json.Marshal(smp); err != nil {
		t.Fatalf("the sample does not encode: %v", err)
	}
	if smp.ConcurrencyLimit != 12 || smp.Inflight != 0 || smp.ShedRPSByReason["overload"] != 0 {
		t.Errorf("sample with a NaN gauge and an +Inf counter: limit %v inflight %v shed %v/s, want 12, 0 (missing), 0",
			smp.ConcurrencyLimit, smp.Inflight, smp.ShedRPSByReason)
	}
	// The counter comes back at 140: its growth since its last finite
	// value (100) shows now, 40 in the tick, not 140 counted from zero.
	bad.Store(false)
	gw, _ = get(t0.Add(2*tick), "?after=1")
	smp, _ = next(st, t0.Add(2*tick), gw)
	if got := smp.ShedRPSByReason["overload"]; got != 40 {
		t.Errorf("shed rate after the +Inf scrape %v/s, want 40 (140 − 100 over the tick)", got)
	}
}

// Non-finite values are counted in every Sample from then on and reported
// once per child on the error log, not once per scrape.
func TestNonFiniteCountedAndLoggedOnce(t *testing.T) {
	var log strings.Builder
	s := &sampling{l: &Lab{opts: Options{Progress: &log}}}
	a, b := &scrapeSlot{}, &scrapeSlot{}
	nan := []scrape.NonFinite{{Name: "levee_inflight", Labels: map[string]string{"class": "ai"}, Value: math.NaN()}}
	s.nonFinite(a, "gateway-0", nan)
	s.nonFinite(a, "gateway-0", append(nan, nan...))
	s.nonFinite(b, "node-1", nan)
	s.nonFinite(b, "node-1", nil)
	if n := s.nonFiniteN.Load(); n != 4 {
		t.Errorf("counted %d non-finite values, want 4", n)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `gateway-0 /metrics: levee_inflight{class="ai"} = NaN is not a usable number`) || !strings.HasPrefix(lines[1], "node-1 ") {
		t.Errorf("error log %q, want one line for gateway-0 and one for node-1", log.String())
	}
}
