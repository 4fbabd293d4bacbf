package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

// TestAgentRefusalRefundsTokens: an agent task admitted (rate limit,
// guard, bulkhead) and then refused — not one sub-call fits the token
// budget, or every sub-call place is taken — used no tokens: its
// token-cost bucket gets its charge back and levee_tokens_used_total
// counts nothing for it, as for any other refusal (refundRateLimit).
// Before, each refusal drained the tenant's bucket by the task's
// estimate and counted it as used, so a run of refusals turned the
// tenant's next tasks away as rate limited although nothing ran.
func TestAgentRefusalRefundsTokens(t *testing.T) {
	for _, tc := range []struct {
		name        string
		hold, allow func(t *testing.T, s *Server)
	}{
		{"budget", func(t *testing.T, s *Server) {
			// Hold 700 of P2's 750 tokens: not one sub-call of 100 fits.
			for _, n := range []int64{250, 250, 200} {
				if err := s.G.budget.Reserve(2, n); err != nil {
					t.Fatal(err)
				}
			}
		}, func(_ *testing.T, s *Server) { s.G.budget.Release(700) }},
		{"sub-call places", func(t *testing.T, s *Server) {
			if n := s.G.subcalls.reserve(1, true); n != 1 {
				t.Fatalf("reserved %d places, want 1", n)
			}
		}, func(_ *testing.T, s *Server) { s.G.subcalls.unreserve(1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fm := newFakeModel(t, 16, 0)
			cfg := testConfig(fm.addr())
			// A sub-call of this body is estimated at 100 tokens; a task
			// is cut to 2 of them (the cap is 250): 200 charged.
			cfg.TokenBudget, cfg.Budget.ReserveP0, cfg.Budget.ReserveP1 = 1000, 0.25, 0
			cfg.Agent.MaxSubcallsInflight, cfg.Agent.QueueSize = 1, 0
			cfg.RateLimit.Rules = []RuleConfig{{Tenant: "batch", Route: "agent", Cost: CostTokens,
				Rule: ratelimit.Rule{Algorithm: ratelimit.TokenBucket, ReplenishRate: 0.001, Burst: 400}}}
			s := startServer(t, cfg)
			body := `{"prompt":"` + strings.Repeat("a", 400) + `","max_tokens":0}`
			url := "http://" + s.Addr() + "/v1/agent"
			tc.hold(t, s)
			for i := range 3 {
				if a := call(t, "POST", url, "k2", body); a.status != 503 || a.outcome != wire.OutcomeShedBudget.String() {
					t.Fatalf("task %d with no room: %v; want 503 shed_budget", i, a)
				}
			}
			if used := counterSum(scrape(t, s), wire.MetricTokensUsed, nil); used != 0 {
				t.Errorf("%s = %v after 3 refused tasks, want 0", wire.MetricTokensUsed, used)
			}
			tc.allow(t, s)
			if a := call(t, "POST", url, "k2", body); a.outcome != wire.OutcomeOK.String() {
				t.Fatalf("task once there is room: %v; want ok (the refused tasks cost the bucket nothing)", a)
			}
			eventually(t, 2*time.Second, func() bool { return s.G.budget.Inflight() == 0 }, "the budget back to 0 after the tasks")
		})
	}
}

// TestBudgetCapByPriority: a request costing more than its priority may
// ever fill of the token budget can never pass, whatever the load: it is
// a 400 naming the field, like one over budget.max_request_tokens, not a
// 503 shed_budget that a client retries forever. Here reserve_p0 0.6
// makes the per-request cap 600 of 1000 tokens while P1 and P2 may fill
// 400: before, a lone P2 request of 500 was refused 503 every time.
func TestBudgetCapByPriority(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	cfg := testConfig(fm.addr())
	cfg.TokenBudget, cfg.Budget.ReserveP0, cfg.Budget.ReserveP1 = 1000, 0.6, 0
	s := startServer(t, cfg)
	url := "http://" + s.Addr() + "/v1/chat/completions"
	// 1936 characters / 4 + the default 16 completion tokens: 500.
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", 1936) + `"}]}`
	for range 2 {
		a := call(t, "POST", url, "k2", body)
		if a.status != 400 || a.outcome != wire.OutcomeError.String() || a.errorField() != "messages" ||
			!strings.Contains(string(a.body), "reserve_p0") {
			t.Fatalf("P2 request over what P2 may fill: %v; want 400 naming messages and reserve_p0", a)
		}
	}
	if a := call(t, "POST", url, "k0", body); a.outcome != wire.OutcomeOK.String() {
		t.Fatalf("the same request at P0, within the cap: %v; want ok", a)
	}
	// An agent task whose one sub-call P2 may never hold: 400 too.
	agent := `{"prompt":"` + strings.Repeat("a", 1936) + `","max_tokens":16}`
	if a := call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k2", agent); a.status != 400 || a.errorField() != "prompt" {
		t.Fatalf("P2 agent task whose sub-call P2 may never hold: %v; want 400 naming prompt", a)
	}
}

// TestRuleForUnknownTenantRefused: a rate-limit rule whose tenant no API
// key has (nor the anonymous tenant) could never match; a misspelt tenant
// used to be accepted and left the tenant it meant unlimited. It is
// refused naming the rule's tenant and line at load, and on the admin API.
func TestRuleForUnknownTenantRefused(t *testing.T) {
	yaml := "upstream:\n  nodes: [\"127.0.0.1:9\"]\nkeys:\n  - {key: a, tenant: batch, priority: P2}\n" +
		"ratelimit:\n  rules:\n    - {tenant: batch, route: chat, algorithm: sliding_window, limit: 3, window: 1s}\n" +
		"    - {tenant: bacth, route: agent, algorithm: sliding_window, limit: 3, window: 1s}\n"
	_, err := ParseConfig([]byte(yaml))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "ratelimit.rules[1].tenant" || ce.Line != 8 || !strings.Contains(err.Error(), "bacth") {
		t.Fatalf("rule for an unknown tenant: %v; want a *ConfigError on ratelimit.rules[1].tenant, line 8, naming bacth", err)
	}
	for _, ok := range []string{"batch", "anonymous", "'*'"} {
		if _, err := ParseConfig([]byte(strings.Replace(yaml, "bacth", ok, 1))); err != nil {
			t.Errorf("rule for tenant %q: %v", ok, err)
		}
	}

	fm := newFakeModel(t, 4, 0)
	s := startServer(t, testConfig(fm.addr()))
	a := admin(t, s, "PUT", "/admin/limits", `{"ratelimit":{"rules":[{"tenant":"trade","route":"*","algorithm":"sliding_window","limit":5,"window_ms":1000},{"tenant":"trdae","route":"*","algorithm":"sliding_window","limit":5,"window_ms":1000}]}}`)
	if a.status != 400 || a.errorField() != "ratelimit.rules[1].tenant" {
		t.Fatalf("admin rule for an unknown tenant: %v; want 400 naming ratelimit.rules[1].tenant", a)
	}
	if n := len(s.G.Config().RateLimit.Rules); n != 0 {
		t.Errorf("%d rules in force after the refused patch, want 0", n)
	}
}

// settlePanicStore is a local store whose Settle panics: a stand-in for
// any bug on the request path after admission.
type settlePanicStore struct{ *ratelimit.Local }

func (settlePanicStore) Settle(context.Context, string, ratelimit.Rule, int64, time.Time) error {
	panic("injected settle bug")
}

// TestPanicAfterAdmissionReleases: a request that panics after admission
// (here in the token bucket's settlement, once its stream has ended) is
// recovered and counted once, and gives back what it held: its place in
// the class's bulkhead and its budget tokens. Before, each such panic
// kept the request's tokens in the budget for good (5 streams: 5 × 11
// tokens), so a recurring bug shrank the budget and the places until
// nothing passed.
func TestPanicAfterAdmissionReleases(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	cfg := testConfig(fm.addr())
	cfg.RateLimit.Rules = []RuleConfig{{Tenant: "*", Route: "chat", Cost: CostTokens,
		Rule: ratelimit.Rule{Algorithm: ratelimit.TokenBucket, ReplenishRate: 1000, Burst: 1000}}}
	s := startServer(t, cfg, WithStore(settlePanicStore{ratelimit.NewLocal()}))
	const n = 5
	for range n {
		_ = call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k1", streamBody)
	}
	if got := counterSum(scrape(t, s), wire.MetricRequests, map[string]string{"route": "chat"}); got != n {
		t.Errorf("%v outcomes counted for %d requests", got, n)
	}
	deadline := time.Now().Add(5 * time.Second) // waiting for a state: only a leak takes this long
	for s.G.budget.Inflight() != 0 || s.G.bulkheads[classStream].Stats().Inflight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d panics: %d budget tokens and %d stream places still held, want 0",
				n, s.G.budget.Inflight(), s.G.bulkheads[classStream].Stats().Inflight)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
