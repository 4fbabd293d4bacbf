package gateway

import (
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
