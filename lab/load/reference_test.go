package load

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

// The reference limiter decides, on the arrivals' intended times, exactly
// as one sliding window would: its count is checked against an
// independent log kept here over the same arrival times, on a fake clock.
// Priorities without a rule count nothing; a limit above the rate lets
// every sent request through.
func TestReferenceLimiter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "pong") }))
	defer srv.Close()
	// 125/s is a gap of exactly 8 ms; a window of 1,004 ms keeps every
	// arrival off an expiry's instant, so the log's edge convention does
	// not matter.
	const rate, gap = 125.0, 8 * time.Millisecond
	for _, tc := range []struct {
		name   string
		prio   string
		rules  map[string]ratelimit.Rule
		window time.Duration // the rule's window; 0: no reference for prio
		limit  int
	}{
		{"sliding window under the offer", "P1",
			map[string]ratelimit.Rule{"P1": {Algorithm: ratelimit.SlidingWindow, Limit: 100, Window: 1004 * time.Millisecond}},
			1004 * time.Millisecond, 100},
		{"a limit above the offer passes all", "P1",
			map[string]ratelimit.Rule{"P1": {Algorithm: ratelimit.TokenBucket, ReplenishRate: 500, Burst: 10}},
			0, -1},
		{"another priority's rule counts nothing here", "P2",
			map[string]ratelimit.Rule{"P0": {Algorithm: ratelimit.SlidingWindow, Limit: 1, Window: time.Second}},
			0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := allRoutesConfig(srv.URL)
			cfg.Mix.Routes = map[string]float64{"standard": 1}
			cfg.Mix.Priorities = map[string]float64{tc.prio: 1}
			cfg.Arrival = ArrivalConstant
			cfg.MaxOutstanding = 100000
			cfg.Reference = tc.rules
			fc := clockwork.NewFakeClock()
			g, err := New(cfg, WithClock(fc))
			if err != nil {
				t.Fatal(err)
			}
			runFor(t, g, fc, rate, 2500*time.Millisecond)
			w := g.Tick()
			pw := w.ByPriority[tc.prio]
			if pw.OfferedTotal < 300 || pw.FinishedTotal != pw.OfferedTotal || pw.OKTotal != pw.OfferedTotal {
				t.Fatalf("offered %d, finished %d, ok %d: want every one of 300+ answered", pw.OfferedTotal, pw.FinishedTotal, pw.OKTotal)
			}
			var want uint64
			switch {
			case tc.window > 0: // an exact log over the arrivals at k × gap
				var log []time.Duration
				for k := range pw.OfferedTotal {
					at := time.Duration(k) * gap
					for len(log) > 0 && log[0] <= at-tc.window {
						log = log[1:]
					}
					if len(log) < tc.limit {
						log = append(log, at)
						want++
					}
				}
			case tc.limit < 0:
				want = pw.OfferedTotal
			}
			if pw.ReferencePassedTotal != want {
				t.Errorf("reference passed %d of %d, an exact limiter passes %d", pw.ReferencePassedTotal, pw.OfferedTotal, want)
			}
			// The gateway side is untouched: nothing was rate limited.
			if pw.PassedRateLimitTotal != pw.FinishedTotal {
				t.Errorf("passed the rate limit %d of %d finished", pw.PassedRateLimitTotal, pw.FinishedTotal)
			}
			if w.OutcomeTotal[wire.OutcomeShedRateLimit.String()] != 0 {
				t.Error("a shed_ratelimit from a server that never sheds")
			}
		})
	}
}

// A reference that cannot be built, or that would judge retried attempts,
// is refused naming the field.
func TestReferenceValidate(t *testing.T) {
	sw := ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 100, Window: time.Second}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"unknown priority", func(c *Config) { c.Reference = map[string]ratelimit.Rule{"P7": sw} }, "reference.P7: not a priority"},
		{"invalid rule", func(c *Config) {
			c.Reference = map[string]ratelimit.Rule{"P1": {Algorithm: ratelimit.SlidingWindow, Window: time.Second}}
		}, "reference.P1: ratelimit: rule field limit"},
		{"a bucket that never fills", func(c *Config) {
			c.Reference = map[string]ratelimit.Rule{"P0": {Algorithm: ratelimit.TokenBucket, ReplenishRate: 1e-9, Burst: 10}}
		}, "reference.P0"},
		{"with retries", func(c *Config) {
			c.Reference = map[string]ratelimit.Rule{"P1": sw}
			c.Retry = RetryPolicy{Attempts: 3, Backoff: 10 * time.Millisecond}
		}, "reference: needs one attempt per request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	c := validConfig()
	c.Reference = map[string]ratelimit.Rule{"P0": sw, "P2": sw}
	if err := c.Validate(); err != nil {
		t.Errorf("a valid reference refused: %v", err)
	}
}
