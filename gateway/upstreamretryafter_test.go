package gateway

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// TestUpstreamRetryAfterPassedOn: a real backend's own refusal or
// failure that says when to come back (OpenAI's 429 with Retry-After, a
// server's or a proxy's 503) reaches the client's 502 with that
// Retry-After, on chat (streamed or not) and completions, fallback off;
// one without it gets none. Each request is counted once, as an error.
// Before, the header was dropped, so an SDK retried at once into the same
// refusal.
func TestUpstreamRetryAfterPassedOn(t *testing.T) {
	when := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		status     int
		retryAfter string
		want       func(string) bool
	}{
		{http.StatusTooManyRequests, "7", func(v string) bool { return v == "7" }},
		{http.StatusServiceUnavailable, "3", func(v string) bool { return v == "3" }},
		{http.StatusServiceUnavailable, when, func(v string) bool { n, err := strconv.Atoi(v); return err == nil && n > 60 && n <= 91 }},
		{http.StatusInternalServerError, "", func(v string) bool { return v == "" }},
		{http.StatusBadGateway, "soon", func(v string) bool { return v == "" }}, // malformed: not passed on
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.status)+" "+c.retryAfter, func(t *testing.T) {
			s, base := gatewayBeforeFailingNode(t, c.status, c.retryAfter, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			reqs := []struct{ route, path, body string }{
				{"chat", wire.PathChat, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
				{"chat", wire.PathChat, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
				{"completions", wire.PathCompletions, `{"model":"m","prompt":"hi"}`},
			}
			for _, r := range reqs {
				a := call(t, http.MethodPost, base+r.path, "k1", r.body)
				if a.status != http.StatusBadGateway || a.outcome != wire.OutcomeError.String() || a.errorCode() != wire.CodeUpstreamError {
					t.Fatalf("%s: %v", r.body, a)
				}
				if got := a.header.Get("Retry-After"); !c.want(got) {
					t.Errorf("%s: Retry-After %q (the model sent %q)", r.body, got, c.retryAfter)
				}
			}
			fams := scrape(t, s)
			for route, want := range map[string]float64{"chat": 2, "completions": 1} {
				if got := counterSum(fams, wire.MetricRequests, map[string]string{"route": route}); got != want {
					t.Errorf("%s requests counted %v, want %v", route, got, want)
				}
				if got := counterSum(fams, wire.MetricRequests, map[string]string{"route": route, "outcome": "error"}); got != want {
					t.Errorf("%s errors counted %v, want %v", route, got, want)
				}
			}
		})
	}
}

// TestUpstreamRetryAfterParse: delay-seconds and HTTP-dates, bounded;
// anything else is none.
func TestUpstreamRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 12, 8, 2, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		"0":                             0,
		"-3":                            0,
		"1.5":                           0,
		"999999999999":                  24 * time.Hour,
		"Tue, 08 Dec 2026 02:00:30 GMT": 30 * time.Second,
		"Tue, 08 Dec 2026 01:59:00 GMT": 0,
		"Thu, 31 Dec 2026 00:00:00 GMT": 24 * time.Hour,
		"tomorrow":                      0,
	} {
		if got := upstreamRetryAfter(h, now); got != want {
			t.Errorf("upstreamRetryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}

// gatewayBeforeFailingNode starts a gateway (fallback off) in front of one
// node that passes its health check and answers every other request with
// status, the JSON body and, when retryAfter is not "", that Retry-After.
// It returns the gateway and its traffic base URL.
func gatewayBeforeFailingNode(t *testing.T, status int, retryAfter, body string) (*Server, string) {
	t.Helper()
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.PathHealthz {
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(node.Close)
	cfg := testConfig(strings.TrimPrefix(node.URL, "http://"))
	cfg.Defenses.Fallback = false
	s := startServer(t, cfg)
	return s, "http://" + s.Addr()
}
