package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestModelDiesMidStream: a model that breaks off a stream after its first
// event (its process killed, its connection reset) leaves the client a
// broken stream — the events so far, then a read error, never a clean end
// that reads as a whole answer — and the request counts as an error.
func TestModelDiesMidStream(t *testing.T) {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseChunk+"\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	t.Cleanup(model.Close)
	s := startServer(t, testConfig(strings.TrimPrefix(model.URL, "http://")))
	a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k1", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if a.status != 200 || a.err == nil || string(a.body) != sseChunk+"\n\n" {
		t.Fatalf("got %v, want the first event then a read error", a)
	}
	eventually(t, 2*time.Second, func() bool {
		return counterSum(scrape(t, s), "levee_requests_total", map[string]string{"route": "chat", "outcome": "error"}) == 1
	}, "the broken stream counted as an error")
}
