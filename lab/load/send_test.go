package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/internal/wire"
)

// The deadline header is the client timeout in milliseconds rounded up and
// never 0, which the gateway refuses.
func TestDeadlineHeader(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		want    string
	}{
		{time.Nanosecond, "1"},
		{500 * time.Microsecond, "1"},
		{999999, "1"},
		{time.Millisecond, "1"},
		{1500 * time.Microsecond, "2"},
		{2 * time.Second, "2000"},
		{2*time.Second + 1, "2001"},
	} {
		s := spec{route: RouteStandard, target: "http://127.0.0.1:1"}
		req, err := newRequest(context.Background(), s, tc.timeout)
		if err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get(wire.HeaderDeadlineMs); got != tc.want {
			t.Errorf("timeout %v: %s %q, want %q", tc.timeout, wire.HeaderDeadlineMs, got, tc.want)
		}
	}
}

// A target's base path prefixes the request path.
func TestTargetBasePath(t *testing.T) {
	for _, target := range []string{"http://127.0.0.1:1/gw", "http://127.0.0.1:1/gw/"} {
		cfg := validConfig()
		cfg.Targets = []string{target}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		s := spec{route: RouteStandard, target: normalizeTargets(cfg.Targets)[0]}
		req, err := newRequest(context.Background(), s, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if want := "/gw" + wire.PathStandard + "ping"; req.URL.Path != want || req.URL.RawQuery != "" {
			t.Errorf("%s: request to %q, want %q", target, req.URL.RequestURI(), want)
		}
	}
}

// Only a request that reached the server counts among the admitted
// latencies: a refused connection is an error the gateway never admitted,
// while an answer of any status, or a timeout waiting for one, reached it.
// The outcomes stay exact either way.
func TestAdmittedLatencyNeedsTheServer(t *testing.T) {
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close()
	answer := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	for _, tc := range []struct {
		name     string
		url      string
		outcome  wire.Outcome
		admitted bool // every request's latency is among the admitted ones, else none
	}{
		{"refused", refusedURL, wire.OutcomeError, false},
		{"500", answer(http.StatusInternalServerError), wire.OutcomeError, true},
		{"ok", answer(http.StatusOK), wire.OutcomeOK, true},
		{"no answer", hang.URL, wire.OutcomeTimeout, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := allRoutesConfig(tc.url)
			cfg.Mix.Routes = map[string]float64{"standard": 1}
			cfg.Arrival = ArrivalConstant
			// Only the server that never answers should meet the client
			// timeout; the others get one no busy machine reaches.
			cfg.ClientTimeout = 10 * time.Second
			if tc.outcome == wire.OutcomeTimeout {
				cfg.ClientTimeout = 100 * time.Millisecond
			}
			cfg.MaxOutstanding = 1000
			fc := clockwork.NewFakeClock()
			g, err := New(cfg, WithClock(fc))
			if err != nil {
				t.Fatal(err)
			}
			tr := g.Track()
			defer tr.Close()
			tr.Mark(true)
			runFor(t, g, fc, 100, 50*time.Millisecond)
			for _, got := range []Totals{g.Totals(), tr.Totals()} {
				if got.Offered == 0 || got.Unaccounted() != 0 || got.Outcomes[tc.outcome.String()] != got.Offered {
					t.Fatalf("offered %d, outcomes %v", got.Offered, got.Outcomes)
				}
				want := int64(0)
				if tc.admitted {
					want = int64(got.Offered)
				}
				if n := got.Admitted.TotalCount(); n != want {
					t.Errorf("%d admitted latencies for %d offered, want %d", n, got.Offered, want)
				}
			}
		})
	}
}
