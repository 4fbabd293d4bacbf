package lab

import (
	"context"
	"path/filepath"
	"testing"
)

// TestNodesMaxTokens: an experiment's nodes.max_tokens reaches the node
// processes (--max-tokens) and the gateway's max_tokens_limit, so chats
// asking 40000 tokens, over the default bound of 32768, are answered end
// to end. Without it every one was a 400 (outcome error).
func TestNodesMaxTokens(t *testing.T) {
	exp := mustParse(t, `
name: longcontext
duration: 1s
start_rate: 10
mix:
  routes: {chat: 1}
  max_tokens: 40000
nodes:
  count: 1
  max_tokens: 40000
  knobs: {slots: 16, ms_per_1k_tokens: 0, answer_tokens: 0, latency: {dist: fixed, fixed_ms: 1}}
gateway:
  defenses: {ratelimit: false, guard: false, bulkhead: false, budget: false}
`)
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, Record: true, Out: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(); err != nil {
		t.Fatal(err)
	}
	sum := l.Summary()
	if sum == nil {
		t.Fatal("no summary")
	}
	if sum.Offered == 0 || sum.Outcomes["ok"] != sum.Offered {
		t.Fatalf("chats of 40000 tokens with nodes.max_tokens 40000: offered %d, outcomes %v", sum.Offered, sum.Outcomes)
	}
}
