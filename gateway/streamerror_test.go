package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestStreamErrorEventIsError: a real server that fails after its 200
// says so inside the stream — vLLM sends data: {"error":{…}} and then
// data: [DONE], llama.cpp's server and OpenAI an error object too. The
// client gets the stream whole (the model's error event, [DONE], a clean
// end) and the trailer X-Levee-Outcome-Final says error; the request is
// counted once, as an error, not as ok (goodput). An "error": null in a
// chunk is no error. Before, such a stream was ok.
func TestStreamErrorEventIsError(t *testing.T) {
	chunk := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
	cases := []struct {
		name, event, want string
	}{
		{"vllm error event", `{"error":{"message":"The decoder prompt is too long","type":"BadRequestError","param":null,"code":400}}`, wire.OutcomeError.String()},
		{"error null", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}],"error":null}`, wire.OutcomeOK.String()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == wire.PathHealthz {
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, ": ping\n\ndata: "+chunk+"\n\ndata: "+c.event+"\n\ndata: [DONE]\n\n")
			}))
			t.Cleanup(node.Close)
			s := startServer(t, testConfig(strings.TrimPrefix(node.URL, "http://")))
			for _, path := range []string{wire.PathChat, wire.PathCompletions} {
				body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
				if path == wire.PathCompletions {
					body = `{"model":"m","stream":true,"prompt":"hi"}`
				}
				req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer k1")
				resp, err := testClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body) // a clean end: no error
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: status %d, read error %v", path, resp.StatusCode, err)
				}
				if !strings.Contains(string(b), "data: "+c.event+"\n\n") || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
					t.Fatalf("%s: the stream was not relayed whole: %q", path, b)
				}
				if got := resp.Trailer.Get(wire.HeaderOutcomeFinal); got != c.want {
					t.Fatalf("%s: trailer %s %q, want %q", path, wire.HeaderOutcomeFinal, got, c.want)
				}
			}
			fams := scrape(t, s)
			for _, route := range []string{"chat", "completions"} {
				if all, got := counterSum(fams, wire.MetricRequests, map[string]string{"route": route}),
					counterSum(fams, wire.MetricRequests, map[string]string{"route": route, "outcome": c.want}); all != 1 || got != 1 {
					t.Errorf("%s: %v requests counted, %v of them %s; want 1 and 1", route, all, got, c.want)
				}
			}
		})
	}
}
