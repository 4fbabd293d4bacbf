package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestCredentialRefusal: a real backend that refuses the gateway's key
// (OpenAI's 401 quotes the key, masked but for its end; a 403 for a key
// not allowed the model) is an upstream failure, the operator's to fix:
// the client gets 502 upstream_error naming upstream.headers (or, on chat
// with the fallback on, the fallback), never the backend's 401 or 403 —
// which would tell it that its own key, never forwarded, was wrong — nor
// the backend's body. On chat, a chat stream, completions and
// /v1/models; each request counted once. Any other 4xx is still relayed
// as it came. Before, the 401 and its body reached the client.
func TestCredentialRefusal(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusBadRequest} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			const secret = "Incorrect API key provided: sk-proj-********abcd"
			s, base := gatewayBeforeFailingNode(t, status, "", `{"error":{"message":"`+secret+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
			reqs := []struct{ method, path, body string }{
				{http.MethodPost, wire.PathChat, chatBody},
				{http.MethodPost, wire.PathChat, streamBody},
				{http.MethodPost, wire.PathCompletions, `{"model":"m","prompt":"hi"}`},
				{http.MethodGet, wire.PathModels, ""},
			}
			for _, r := range reqs {
				a := call(t, r.method, base+r.path, "k1", r.body)
				if status == http.StatusBadRequest { // the request's fault: relayed as it came
					if a.status != status || a.outcome != wire.OutcomeError.String() || !strings.Contains(string(a.body), secret) {
						t.Fatalf("%s %s: %v; want the model's 400 relayed", r.path, r.body, a)
					}
					continue
				}
				if a.status != http.StatusBadGateway || a.outcome != wire.OutcomeError.String() || a.errorCode() != wire.CodeUpstreamError ||
					!strings.Contains(string(a.body), "upstream.headers") || strings.Contains(string(a.body), "sk-proj") {
					t.Fatalf("%s %s: %v; want 502 upstream_error naming upstream.headers, without the model's body", r.path, r.body, a)
				}
			}
			fams := scrape(t, s)
			for route, want := range map[string]float64{"chat": 2, "completions": 1, "other": 1} {
				if all, errs := counterSum(fams, wire.MetricRequests, map[string]string{"route": route}),
					counterSum(fams, wire.MetricRequests, map[string]string{"route": route, "outcome": "error"}); all != want || errs != want {
					t.Errorf("%s: %v requests counted, %v errors; want %v", route, all, errs, want)
				}
			}
		})
	}
	t.Run("fallback", func(t *testing.T) {
		node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != wire.PathHealthz {
				w.WriteHeader(http.StatusUnauthorized)
			}
		}))
		t.Cleanup(node.Close)
		s := startServer(t, testConfig(strings.TrimPrefix(node.URL, "http://")))
		if a := call(t, http.MethodPost, "http://"+s.Addr()+wire.PathChat, "k1", chatBody); a.status != http.StatusOK || a.outcome != wire.OutcomeFallback.String() {
			t.Fatalf("chat with the fallback on: %v", a)
		}
	})
}
