package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/internal/wire"
)

// attackBody is issue 12's attack: a streaming chat with an 800 KB prompt
// (200,000 estimated tokens) and max_tokens 4096.
var attackBody = `{"model":"m","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"` + strings.Repeat("x", 800_000) + `"}]}`

// attack starts one anonymous attack stream and returns its status (0 on
// a transport error); the stream stays open until ctx ends.
func attack(ctx context.Context, t *testing.T, base string, wg *sync.WaitGroup) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+wire.PathChat, strings.NewReader(attackBody))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	wg.Go(func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	return resp.StatusCode
}

// p0Round sends n P0 chats and n P0 predicts and returns the answers that
// were not 200 ok.
func p0Round(t *testing.T, base string, n int) []string {
	t.Helper()
	var bad []string
	for i := range 2 * n {
		path, body := wire.PathChat, `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"settle trade 42"}]}`
		if i%2 == 1 {
			path, body = wire.PathPredict, `{"features":{"amount":12.5}}`
		}
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get(wire.HeaderOutcome) != "ok" {
			bad = append(bad, resp.Status+" "+string(b))
		}
	}
	return bad
}

// TestIssue12Attack is the issue's acceptance: two anonymous streaming
// chats with an 800 KB prompt and max_tokens 4096 while P0 chats and
// predicts run. With the defaults the attack is refused outright (400
// naming the per-request cap). With a budget large enough to admit it,
// the attack streams hold their 408,192 tokens, a third fits under the
// anonymous ceiling and a fourth is shed for budget — and every P0 chat
// and predict meanwhile gets 200. (Before issue 12 the budget admitted a
// lone oversized request and ignored priority: every P0 call got 503
// shed_budget.)
func TestIssue12Attack(t *testing.T) {
	k := quickKnobs()
	k.AnswerTokens, k.TokensPerS, k.AbortOnDisconnect = 0, 200, true // an attack stream runs 20 s unless cut
	node := startNode(t, k)

	t.Run("defaults refuse the attack", func(t *testing.T) {
		s := startGateway(t, nil, node)
		base := "http://" + s.Addr()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		for range 2 {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+wire.PathChat, strings.NewReader(attackBody))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(b), "budget.max_request_tokens") || !strings.Contains(string(b), `"field":"messages"`) {
				t.Fatalf("attack: %s %s", resp.Status, b)
			}
		}
		if bad := p0Round(t, base, 10); len(bad) > 0 {
			t.Fatalf("P0 not 200: %v", bad)
		}
		cancel()
		wg.Wait()
	})

	t.Run("admitted attack cannot take P0's headroom", func(t *testing.T) {
		s := startGateway(t, func(c *gateway.Config) { c.TokenBudget = 1_000_000 }, node)
		base := "http://" + s.Addr()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		for range 2 {
			if st := attack(ctx, t, base, &wg); st != 200 {
				t.Fatalf("attack stream: status %d, want 200 (admitted under this budget)", st)
			}
		}
		inflight := func() float64 { return metric(t, s, wire.MetricTokensInflight, nil) }
		if got := inflight(); got < 2*204_096 {
			t.Fatalf("tokens in flight %v, want the two attack streams' 408192", got)
		}
		if bad := p0Round(t, base, 10); len(bad) > 0 {
			t.Fatalf("P0 not 200 while the attack holds %v tokens: %v", inflight(), bad)
		}
		third := attack(ctx, t, base, &wg)  // 612,288 ≤ the anonymous ceiling of 650,000
		fourth := attack(ctx, t, base, &wg) // 816,384 > 650,000
		if third != 200 || fourth != 503 {
			t.Fatalf("third attack stream %d (want 200), fourth %d (want 503 shed_budget)", third, fourth)
		}
		if bad := p0Round(t, base, 10); len(bad) > 0 {
			t.Fatalf("P0 not 200 with the anonymous share full (%v tokens): %v", inflight(), bad)
		}
		if shed := metric(t, s, wire.MetricShed, map[string]string{"reason": "budget", "priority": "P0"}); shed != 0 {
			t.Fatalf("%v P0 requests shed for budget", shed)
		}
	})
}
