package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBOMBodyAccepted: a body that starts with a UTF-8 byte order mark
// (curl -d @file of a file Windows PowerShell wrote) is a chat request
// like any other, and goes upstream without the mark, which Go and Rust
// backends would refuse. Before, the gateway answered 400 "body must be a
// JSON object", though vLLM (Python's json) takes such a body.
func TestBOMBodyAccepted(t *testing.T) {
	f := newFakeModel(t, 2, time.Millisecond)
	s := startServer(t, testConfig(f.addr()))
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k1", "\xef\xbb\xbf"+body)
	if a.status != 200 {
		t.Fatalf("BOM body: %v", a)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) != 1 || f.bodies[0] != body {
		t.Fatalf("the model got %q, want %q", f.bodies, body)
	}
}

// TestModelRefusalRelayedAsIs: a model's 4xx reaches the client as it
// came — status, Content-Type, body — JSON or not (nginx in front of vLLM
// answers a body over its client_max_body_size with an HTML 413), streamed
// or not. Before, a plain call's non-JSON 4xx read as a broken model: the
// client got the static fallback answer with 200 (a stream got the 413,
// labelled application/json).
func TestModelRefusalRelayedAsIs(t *testing.T) {
	const page = "<html><body><h1>413 Request Entity Too Large</h1></body></html>\n"
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(model.Close)
	s := startServer(t, testConfig(strings.TrimPrefix(model.URL, "http://")))
	for _, stream := range []string{"false", "true"} {
		a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k1", `{"model":"m","stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`)
		if a.status != 413 || a.header.Get("Content-Type") != "text/html" || string(a.body) != page || a.outcome != "error" {
			t.Errorf("stream %s: %v, Content-Type %q", stream, a, a.header.Get("Content-Type"))
		}
	}
}
