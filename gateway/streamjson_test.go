package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestStreamAnsweredWhole: a backend that ignores "stream": true and
// answers a whole JSON completion (some proxies and older servers do) is
// a malformed answer for a stream request: 502 upstream_error saying so
// (fallback off) or the fallback stream, counted once as error — not
// relayed under text/event-stream, where an OpenAI client's SSE reader
// finds no event and ends quietly, counted ok. An SSE answer whose
// Content-Type is missing or text/plain (Go's sniffing) is still relayed.
func TestStreamAnsweredWhole(t *testing.T) {
	whole := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	for _, c := range []struct{ name, ctype, body, outcome string }{
		{"json", "application/json", whole, wire.OutcomeError.String()},
		{"json charset", "application/json; charset=utf-8", whole, wire.OutcomeError.String()},
		{"sse as text/plain", "text/plain; charset=utf-8", "data: " + strings.Replace(whole, `"message"`, `"delta"`, 1) + "\n\ndata: [DONE]\n\n", wire.OutcomeOK.String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == wire.PathHealthz {
					return
				}
				w.Header().Set("Content-Type", c.ctype)
				_, _ = w.Write([]byte(c.body))
			}))
			t.Cleanup(node.Close)
			cfg := testConfig(strings.TrimPrefix(node.URL, "http://"))
			cfg.Defenses.Fallback = false
			s := startServer(t, cfg)
			a := call(t, http.MethodPost, "http://"+s.Addr()+wire.PathChat, "k1", streamBody)
			if c.outcome == wire.OutcomeOK.String() {
				if a.status != http.StatusOK || a.outcome != c.outcome || !strings.HasSuffix(string(a.body), "data: [DONE]\n\n") {
					t.Fatalf("%v; want the stream relayed", a)
				}
			} else if a.status != http.StatusBadGateway || a.outcome != c.outcome || a.errorCode() != wire.CodeUpstreamError ||
				!strings.Contains(string(a.body), "not text/event-stream") {
				t.Fatalf("%v; want 502 upstream_error saying the backend answered whole", a)
			}
			fams := scrape(t, s)
			if all, got := counterSum(fams, wire.MetricRequests, map[string]string{"route": "chat"}),
				counterSum(fams, wire.MetricRequests, map[string]string{"route": "chat", "outcome": c.outcome}); all != 1 || got != 1 {
				t.Errorf("%v requests counted, %v %s; want 1 and 1", all, got, c.outcome)
			}
		})
	}
}
