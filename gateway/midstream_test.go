package gateway

import (
	"encoding/json"
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

// TestFallbackHasCompletionFields: the static fallback answer carries
// every field OpenAI's schema marks required of a chat completion and of
// a stream chunk (id, object, created, model, choices with index), so
// clients that decode strictly (Rust's async-openai: "missing field
// `created`") take it. Before, "created" was missing from both.
func TestFallbackHasCompletionFields(t *testing.T) {
	f := newFakeModel(t, 1, time.Millisecond)
	f.status.Store(http.StatusInternalServerError)
	s := startServer(t, testConfig(f.addr()))
	for _, stream := range []bool{false, true} {
		body := `{"model":"m","stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,"messages":[{"role":"user","content":"hi"}]}`
		a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k1", body)
		data := a.body
		if stream {
			events := strings.Split(string(a.body), "\n\n")
			if len(events) != 3 || events[1] != "data: [DONE]" {
				t.Fatalf("stream fallback: %q", a.body)
			}
			data = []byte(strings.TrimPrefix(events[0], "data: "))
		}
		var c struct {
			ID, Object, Model *string
			Created           *int64
			Choices           []struct{ Index *int }
		}
		if err := json.Unmarshal(data, &c); err != nil || a.outcome != "fallback" {
			t.Fatalf("stream %v: %v: %v", stream, a, err)
		}
		if c.ID == nil || c.Object == nil || c.Model == nil || c.Created == nil || *c.Created <= 0 || len(c.Choices) != 1 || c.Choices[0].Index == nil {
			t.Errorf("stream %v: a required field is missing: %s", stream, data)
		}
	}
}
