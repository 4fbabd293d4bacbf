package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/internal/wire"
)

// TestRequeueHonoursRetryAfter: a call that the one node refused (429)
// while nothing else of the gateway's was in flight does not go straight
// back when the node said when to come back (Retry-After): it stands at
// once, one call, 502 with the node's Retry-After, no retry token asked.
// Without a Retry-After it goes again at once, paying a token, as before:
// with tokens to spare the node gets it again; with none, once. Before,
// a node that said "Retry-After: 7" got the call again within a
// millisecond, as often as the retry budget allowed (23 calls here).
func TestRequeueHonoursRetryAfter(t *testing.T) {
	cases := []struct {
		name                 string
		retryAfter           string
		tokens               bool // the retry budget has tokens to spare
		wantCalls            func(int) bool
		wantSent, wantDenied float64 // < 0: not judged
	}{
		{"Retry-After", "7", true, func(n int) bool { return n == 1 }, 0, 0},
		{"no Retry-After, tokens", "", true, func(n int) bool { return n >= 2 }, -1, -1},
		{"no Retry-After, no token", "", false, func(n int) bool { return n == 1 }, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == wire.PathHealthz {
					return
				}
				calls.Add(1)
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
			}))
			t.Cleanup(node.Close)
			s := startGateway(t, func(c *gateway.Config) {
				c.Upstream.Nodes = []string{strings.TrimPrefix(node.URL, "http://")}
				c.Defenses.Retry = true
				c.Defenses.Fallback, c.Defenses.Guard, c.Defenses.RateLimit = false, false, false
				c.Upstream.Hedge.Disabled = true
				c.Upstream.RetryBudget.MinPerSecond = 0 // a call deposits a tenth of a token: none to spend
				if tc.tokens {
					c.Upstream.RetryBudget.MinPerSecond = 2 // 20 over the TTL
				}
			})
			req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+wire.PathChat, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer k0")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := int(calls.Load())
			t.Logf("%d calls; answered %d %s, Retry-After %q", got, resp.StatusCode, resp.Header.Get(wire.HeaderOutcome), resp.Header.Get("Retry-After"))
			if !tc.wantCalls(got) {
				t.Errorf("the node got %d calls", got)
			}
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Retry-After") != tc.retryAfter {
				t.Errorf("answered %d with Retry-After %q, want 502 with the node's %q", resp.StatusCode, resp.Header.Get("Retry-After"), tc.retryAfter)
			}
			for _, r := range []struct {
				result string
				want   float64
			}{{wire.RetrySent, tc.wantSent}, {wire.RetryDenied, tc.wantDenied}} {
				if r.want < 0 {
					continue
				}
				if got := metric(t, s, wire.MetricRetries, map[string]string{wire.LabelResult: r.result}); got != r.want {
					t.Errorf("retries %s %v, want %v", r.result, got, r.want)
				}
			}
		})
	}
}
