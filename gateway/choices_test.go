package gateway

import (
	"strings"
	"testing"
	"time"
)

// TestChoicesInTheEstimate: a request for n choices may generate n ×
// max_tokens tokens, and the token budget reserves that much: n = 2 of 10
// tokens over a 4-character prompt reserves 1 + 20, and n = 4 of 400
// tokens is over a per-request cap of 1000, a 400 naming it, as one
// choice of 1600 tokens is. Before, n was not read: every request reserved
// one choice, and n let a client past the cap and the budget (4 × 400 in
// a reservation of 401).
func TestChoicesInTheEstimate(t *testing.T) {
	f := newFakeModel(t, 4, time.Millisecond)
	cfg := testConfig(f.addr())
	cfg.TokenBudget = 4000 // P0's headroom, so its per-request cap: 1000
	s := startServer(t, cfg)
	url := "http://" + s.Addr() + "/v1/chat/completions"
	reserved := func() float64 {
		return counterSum(scrape(t, s), "levee_tokens_reserved_total", map[string]string{"priority": "P0"})
	}
	before := reserved()
	a := call(t, "POST", url, "k0", `{"model":"m","n":2,"max_tokens":10,"messages":[{"role":"user","content":"abcd"}]}`)
	if a.status != 200 {
		t.Fatalf("n 2: %v", a)
	}
	if got := reserved() - before; got != 21 {
		t.Fatalf("n 2 × max_tokens 10 + prompt 1 reserved %v tokens, want 21", got)
	}
	a = call(t, "POST", url, "k0", `{"model":"m","n":4,"max_tokens":400,"messages":[{"role":"user","content":"abcd"}]}`)
	if a.status != 400 || a.errorField() != "max_tokens" || !strings.Contains(string(a.body), "1601 tokens") || !strings.Contains(string(a.body), "× n 4") {
		t.Fatalf("n 4 × max_tokens 400 over the cap of 1000: %v", a)
	}
	a = call(t, "POST", url, "k0", `{"model":"m","n":0,"messages":[{"role":"user","content":"abcd"}]}`)
	if a.status != 400 || a.errorField() != "n" {
		t.Fatalf("n 0: %v", a)
	}
}
