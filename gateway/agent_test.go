package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// agentAnswer is the JSON of an agent answer.
type agentAnswer struct {
	Steps    int    `json:"steps"`
	FanOut   int    `json:"fan_out"`
	Level    string `json:"level"`
	Degraded bool   `json:"degraded"`
	Fallback bool   `json:"fallback"`
}

func parseAgent(t *testing.T, a answer) agentAnswer {
	t.Helper()
	var v agentAnswer
	_ = json.Unmarshal(a.body, &v)
	return v
}

// TestAgentDegradesByLevel: seed 004's table. A task asking for 3 steps
// runs 3 steps × 4 sub-calls at green, 2 × 2 (core only) at yellow, 2 × 1
// at red, where the complex share is dropped (503), and answers by rules
// with no model call at black. A P2 task is degraded, not shed, at yellow
// and red (priority shedding is for the other model routes). Every task
// is counted once, by result and level.
func TestAgentDegradesByLevel(t *testing.T) {
	fm := newFakeModel(t, 16, 2*time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.Agent.ComplexTokens = 1 << 40 // nothing complex: red runs narrow
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	const body = `{"prompt":"refund order 42","max_tokens":8,"steps":3}`
	for _, tc := range []struct {
		level        string
		outcome      string
		steps, width int
		result       string
	}{
		{"green", "ok", 3, 4, wire.AgentTaskOK},
		{"yellow", "ok", 2, 2, wire.AgentTaskDegraded},
		{"red", "ok", 2, 1, wire.AgentTaskDegraded},
		{"black", "fallback", 0, 0, wire.AgentTaskFallback},
	} {
		t.Run(tc.level, func(t *testing.T) {
			admin(t, s, "PUT", "/admin/level", `{"level":"`+tc.level+`"}`)
			before := fm.arrivals.Load()
			a := call(t, "POST", base+"/v1/agent", "k2", body)
			v := parseAgent(t, a)
			if a.outcome != tc.outcome || v.Steps != tc.steps || v.FanOut != tc.width {
				t.Fatalf("%v; want %s, %d steps × %d", a, tc.outcome, tc.steps, tc.width)
			}
			if got := fm.arrivals.Load() - before; got != int64(tc.steps*tc.width) {
				t.Errorf("%d sub-calls reached the model, want %d", got, tc.steps*tc.width)
			}
			if got := counterSum(scrape(t, s), wire.MetricAgentTasks, map[string]string{"result": tc.result, "level": tc.level}); got != 1 {
				t.Errorf("%s{result=%s,level=%s} = %v, want 1", wire.MetricAgentTasks, tc.result, tc.level, got)
			}
		})
	}
	// Red drops the complex share: with share 1 every complex task.
	cfg.Agent.ComplexTokens, cfg.Agent.RedDropShare = 1, 1
	s = startServer(t, cfg)
	admin(t, s, "PUT", "/admin/level", `{"level":"red"}`)
	before := fm.arrivals.Load()
	a := call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k1", body)
	if a.status != 503 || a.outcome != "shed_overload" || a.header.Get("Retry-After") == "" || fm.arrivals.Load() != before {
		t.Fatalf("complex task at red with drop share 1: %v", a)
	}
	if a := call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k0", body); a.outcome != "ok" {
		t.Fatalf("a P0 complex task must not be dropped: %v", a)
	}
	if got := counterSum(scrape(t, s), wire.MetricAgentTasks, map[string]string{"result": wire.AgentTaskDropped}); got != 1 {
		t.Errorf("dropped tasks %v, want 1", got)
	}
}

// TestAgentBlackWhenNodesDown: with a third of the nodes down (the seed's
// 30 %), agents answer from the rules without calling any model, while
// the overload level itself stays green.
func TestAgentBlackWhenNodesDown(t *testing.T) {
	up := newFakeModel(t, 16, 0)
	dead := newFakeModel(t, 16, 0)
	cfg := testConfig(up.addr(), dead.addr(), newFakeModel(t, 16, 0).addr())
	cfg.Upstream.HealthInterval = 20 * time.Millisecond
	s := startServer(t, cfg)
	dead.srv.Close()
	eventually(t, 5*time.Second, func() bool { return s.G.agentLevel().String() == wire.LevelBlack }, "agent level black")
	before := up.arrivals.Load()
	a := call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k1", agentBody)
	if a.outcome != "fallback" || !parseAgent(t, a).Fallback || up.arrivals.Load() != before {
		t.Fatalf("agent with 1 of 3 nodes down: %v (model calls %d)", a, up.arrivals.Load()-before)
	}
	if lvl := s.G.Level().String(); lvl != wire.LevelGreen {
		t.Errorf("overload level %s: node loss must only blacken agents", lvl)
	}
	if got := counterSum(scrape(t, s), wire.MetricAgentLevel, nil); got != 3 {
		t.Errorf("%s = %v, want 3 (black)", wire.MetricAgentLevel, got)
	}
}

// TestAgentSubcallCapAndQueue: the amplification cap bounds the sub-calls
// at the model; a task's sub-calls beyond the cap wait in the bounded
// queue; a task that finds neither a place under the cap nor in the queue
// is refused at once at the entry, never buffered.
func TestAgentSubcallCapAndQueue(t *testing.T) {
	fm := newFakeModel(t, 16, 150*time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.Agent.MaxSubcallsInflight, cfg.Agent.QueueSize = 1, 3
	s := startServer(t, cfg)
	base := "http://" + s.Addr()

	// One task of 4 sub-calls: one at a time at the model, all answered.
	a := call(t, "POST", base+"/v1/agent", "k0", agentBody)
	if v := parseAgent(t, a); a.outcome != "ok" || v.FanOut != 4 || fm.maxInfl.Load() != 1 {
		t.Fatalf("capped task: %v, model max in flight %d", a, fm.maxInfl.Load())
	}
	// Places are 1 + 3: while a task holds them all, the next is refused
	// before its first sub-call, while the first is still at the model.
	var wg sync.WaitGroup
	var first answer
	wg.Go(func() { first = call(t, "POST", base+"/v1/agent", "k0", agentBody) })
	eventually(t, 5*time.Second, func() bool { return fm.inflight.Load() > 0 }, "the first task at the model")
	before := fm.arrivals.Load()
	second := call(t, "POST", base+"/v1/agent", "k0", agentBody)
	busy := fm.inflight.Load() > 0
	wg.Wait()
	if second.status != 503 || second.outcome != "shed_budget" || !busy {
		t.Fatalf("second task: %v (answered while the first was at the model: %v)", second, busy)
	}
	if first.outcome != "ok" || fm.arrivals.Load()-before > 4 {
		t.Fatalf("first task %v; %d sub-calls after the refusal", first, fm.arrivals.Load()-before)
	}
	if got := counterSum(scrape(t, s), wire.MetricSubcallsQueued, nil); got != 0 {
		t.Errorf("%s = %v after the tasks, want 0", wire.MetricSubcallsQueued, got)
	}
}

// TestAgentPromptNotEscaped: a prompt of 40 KB of "<" travels to each
// sub-call as 40 KB (json.Marshal would make it 240 KB), and a prompt
// over agent.max_prompt_chars is a 400 naming the field.
func TestAgentPromptNotEscaped(t *testing.T) {
	fm := newFakeModel(t, 16, 0)
	cfg := testConfig(fm.addr())
	cfg.Agent.MaxPromptChars = 40_000 // 4 sub-calls × 10,000 tokens: within the per-request cap
	s := startServer(t, cfg)
	prompt := strings.Repeat("<", 40_000)
	a := call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k0", `{"prompt":"`+prompt+`","max_tokens":8}`)
	if a.outcome != "ok" {
		t.Fatalf("%v", a)
	}
	fm.mu.Lock()
	bodies := append([]string(nil), fm.bodies...)
	fm.mu.Unlock()
	if len(bodies) != 4 {
		t.Fatalf("%d sub-call bodies, want 4", len(bodies))
	}
	for _, b := range bodies {
		if len(b) > len(prompt)+256 || !strings.Contains(b, prompt) {
			t.Fatalf("sub-call body of %d bytes for a prompt of %d", len(b), len(prompt))
		}
	}
	a = call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k0", `{"prompt":"`+prompt+`<"}`)
	if a.status != 400 || a.errorField() != "prompt" || !strings.Contains(string(a.body), "max_prompt_chars") {
		t.Fatalf("oversized prompt: %v", a)
	}
}

// TestAgentBudgetDegrades: when the token budget (or its per-request cap)
// cannot take a task's full plan, the task runs shallower — the core
// sub-calls of fewer steps, then a single sub-call — rather than being
// refused (seed 004: complex tasks fall back to a single-step answer);
// only when not one sub-call fits is it refused (503 shed_budget), and a
// single sub-call over the cap is a 400 naming the field.
func TestAgentBudgetDegrades(t *testing.T) {
	fm := newFakeModel(t, 16, 2*time.Millisecond)
	cfg := testConfig(fm.addr())
	// A sub-call of this body is estimated at 100 tokens (400 characters
	// / 4 + max_tokens 0); the cap is 250: at most 2 sub-calls.
	cfg.TokenBudget, cfg.Budget.ReserveP0, cfg.Budget.ReserveP1 = 1000, 0.25, 0
	s := startServer(t, cfg)
	body := `{"prompt":"` + strings.Repeat("a", 400) + `","max_tokens":0,"steps":3}`
	a := call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k2", body)
	if v := parseAgent(t, a); a.outcome != "ok" || !v.Degraded || v.Steps*v.FanOut > 2 {
		t.Fatalf("task over the cap: %v; want a degraded answer of at most 2 sub-calls", a)
	}
	// Hold 700 of P2's 750 tokens: not one sub-call of 100 fits.
	for _, n := range []int64{250, 250, 200} {
		if err := s.G.budget.Reserve(2, n); err != nil {
			t.Fatal(err)
		}
	}
	a = call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k2", body)
	if a.status != 503 || a.outcome != "shed_budget" {
		t.Fatalf("no room for one sub-call: %v", a)
	}
	s.G.budget.Release(600) // 100 held: 650 free for P2, room for 2 sub-calls
	a = call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k2", body)
	if v := parseAgent(t, a); a.outcome != "ok" || v.Steps*v.FanOut > 2 {
		t.Fatalf("room for a shallower plan: %v", a)
	}
	big := `{"prompt":"` + strings.Repeat("a", 2000) + `","max_tokens":0}`
	if a := call(t, "POST", "http://"+s.Addr()+"/v1/agent", "k2", big); a.status != 400 || a.errorField() != "prompt" ||
		!strings.Contains(string(a.body), "budget.max_request_tokens") {
		t.Fatalf("one sub-call over the cap: %v", a)
	}
}

// TestAgentSubcallRefusedWaitsAndGoesAgain: an agent sub-call that every
// node refused (429) waits and goes again, as an ordinary call does (see
// TestRequeueRefusedEverywhere), on a real node over loopback that
// refuses and then accepts: with another sub-call running it waits for
// that one to end, costing no retry token (the node holds the first
// sub-call until the gateway shows the refused one waiting); alone it
// pays a retry token and goes again at once; with the retry defense off
// the refusal stands and the step fails, as before. Before the fix the
// refused sub-call failed at once: beside another nothing waited (the
// node, holding the first, kept it until the task's deadline: 504), and
// alone the task failed (502).
func TestAgentSubcallRefusedWaitsAndGoesAgain(t *testing.T) {
	tests := []struct {
		name      string
		fanOut    int
		retry     bool
		minPerSec float64 // the retry budget's reserve
		hold      bool    // the node holds the first sub-call until one waits
		wantOK    int     // sub-calls answered
		wantCalls int64   // arrivals at the node
		wantSent  float64 // retries paid with a token
	}{
		{name: "another runs: it waits for it, no token", fanOut: 2, retry: true, minPerSec: 0, hold: true, wantOK: 2, wantCalls: 3, wantSent: 0},
		{name: "alone: it pays a token and goes again", fanOut: 1, retry: true, minPerSec: 20, wantOK: 1, wantCalls: 2, wantSent: 1},
		{name: "retry defense off: the refusal stands", fanOut: 1, retry: false, minPerSec: 20, wantOK: 0, wantCalls: 1, wantSent: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g *Gateway
			var arrivals atomic.Int64
			node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == wire.PathHealthz {
					return
				}
				_, _ = io.Copy(io.Discard, r.Body)
				n := arrivals.Add(1)
				w.Header().Set("Content-Type", "application/json")
				switch {
				case n == 1 && tt.hold:
					// Answer once the refused sub-call waits for a slot
					// again (or the request ends: before the fix none waits).
					for {
						if _, queued := g.subcalls.stats(); queued > 0 {
							break
						}
						select {
						case <-r.Context().Done():
							return
						case <-time.After(time.Millisecond):
						}
					}
				case n == 1 || (n == 2 && tt.hold):
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = io.WriteString(w, `{"error":{"message":"full"}}`)
					return
				}
				_, _ = io.WriteString(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
			}))
			t.Cleanup(node.Close)
			cfg := testConfig(strings.TrimPrefix(node.URL, "http://"))
			cfg.Agent.FanOut, cfg.Agent.YellowFanOut, cfg.Agent.RedFanOut = tt.fanOut, tt.fanOut, 1
			cfg.Upstream.RetryBudget.MinPerSecond = tt.minPerSec
			cfg.Upstream.Hedge.Disabled = true
			cfg.Defenses.Retry = tt.retry
			cfg.Defenses.Guard, cfg.Defenses.RateLimit, cfg.Defenses.Fallback = false, false, false
			s := startServer(t, cfg)
			g = s.G
			a := call(t, "POST", "http://"+s.Addr()+wire.PathAgent, "k0", `{"prompt":"refund order 42","max_tokens":8,"steps":1}`, wire.HeaderDeadlineMs, "5000")
			var v struct {
				SubcallsOK int  `json:"subcalls_ok"`
				Degraded   bool `json:"degraded"`
			}
			_ = json.Unmarshal(a.body, &v)
			switch {
			case tt.wantOK == 0:
				if a.status != http.StatusBadGateway || a.outcome != wire.OutcomeError.String() {
					t.Errorf("task: %v; want 502 error (the refusal stands)", a)
				}
			case a.status != http.StatusOK || v.SubcallsOK != tt.wantOK || v.Degraded:
				t.Errorf("task: %v; want 200 with %d sub-calls answered, not degraded", a, tt.wantOK)
			}
			if got := arrivals.Load(); got != tt.wantCalls {
				t.Errorf("%d calls at the node, want %d", got, tt.wantCalls)
			}
			fams := scrape(t, s)
			if got := counterSum(fams, wire.MetricRetries, map[string]string{"result": wire.RetrySent}); got != tt.wantSent {
				t.Errorf("%s{result=sent} = %v, want %v", wire.MetricRetries, got, tt.wantSent)
			}
			if got := counterSum(fams, wire.MetricSubcallsQueued, nil); got != 0 {
				t.Errorf("%s = %v after the task, want 0", wire.MetricSubcallsQueued, got)
			}
			if got := counterSum(fams, wire.MetricSubcallsInflight, nil); got != 0 {
				t.Errorf("%s = %v after the task, want 0", wire.MetricSubcallsInflight, got)
			}
		})
	}
}
