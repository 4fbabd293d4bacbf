package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

// agentPlan is what one agent task may do at the current level.
type agentPlan struct {
	level   admit.Level
	steps   int  // tool-call steps to run, one after the other
	width   int  // parallel sub-calls per step (the core ones first)
	complex bool // the full plan is estimated at ≥ agent.complex_tokens
	drop    bool // red: this complex task is in the share dropped
	rules   bool // black: answer by the rules, no model
}

// agentLevel is the level agent tasks are planned at now: the overload
// level, raised to black when agent.black_nodes_down of the model nodes
// are down (health check failed or breaker open). Without the guard
// agents never degrade: green.
func (g *Gateway) agentLevel() admit.Level {
	if !g.on(defGuard) {
		return admit.Green
	}
	lvl := g.guard.Level()
	if share := g.cfg.Agent.BlackNodesDown; share > 0 && lvl < admit.Black {
		down, all := 0, 0
		for _, n := range g.pool.Stats() {
			all++
			if !n.Up || n.Breaker == wire.BreakerOpen {
				down++
			}
		}
		if all > 0 && float64(down) >= share*float64(all) {
			lvl = admit.Black
		}
	}
	return lvl
}

// planAgent degrades a task as seed 004's table says: green runs every
// step asked for at full fan-out; yellow caps the steps at
// agent.yellow_depth and keeps the core sub-calls only (non-core
// retrieval off); red narrows to agent.red_fan_out and drops
// agent.red_drop_share of complex tasks (P0's are never dropped); black
// answers by rules. Agents are degraded, not shed by priority: yellow
// and red do not turn P2 and P1 agent tasks away (the budget's ceilings
// and the amplification cap bound what they may take).
func (g *Gateway) planAgent(ar AgentRequest, prio admit.Priority, lvl admit.Level) agentPlan {
	a := g.cfg.Agent
	p := agentPlan{level: lvl, steps: ar.Steps, width: a.FanOut}
	p.complex = ar.SubTokens()*int64(ar.Steps)*int64(a.FanOut) >= a.ComplexTokens
	switch lvl {
	case admit.Green:
	case admit.Yellow:
		p.steps, p.width = min(ar.Steps, a.YellowDepth), a.YellowFanOut
	case admit.Red:
		p.steps, p.width = min(ar.Steps, a.YellowDepth), a.RedFanOut
		if p.complex && prio != admit.P0 && a.RedDropShare > 0 {
			// An even, deterministic share: the n-th complex task at red
			// is dropped when ⌊(n+1)·share⌋ > ⌊n·share⌋.
			n := float64(g.agentSeq.Add(1) - 1)
			p.drop = math.Floor((n+1)*a.RedDropShare) > math.Floor(n*a.RedDropShare)
		}
	default:
		p.rules = true
	}
	return p
}

// countTask counts one agent task's result at the level it was planned at.
func (g *Gateway) countTask(result string, lvl admit.Level) {
	g.m.tasks.with(result, lvl.String()).Inc()
}

// serveAgent is POST /v1/agent: one task runs its steps one after the
// other, each a fan-out of parallel model sub-calls (seed 004), through
// the bounded sub-call pool (amplification cap, bounded queue, refusal at
// the entry) and degraded by the agent level.
func (g *Gateway) serveAgent(x *exchange) {
	body, ok := x.readBody()
	if !ok {
		return
	}
	ar, err := ParseAgentRequest(body, g.cfg.Agent.MaxPromptChars, g.cfg.Agent.MaxDepth, g.cfg.MaxTokensLimit)
	if err != nil {
		x.badRequest(err)
		return
	}
	plan := g.planAgent(ar, x.id.Priority, g.agentLevel())
	switch {
	case plan.rules:
		g.agentRules(x, plan.level)
		return
	case plan.drop:
		g.countTask(wire.AgentTaskDropped, plan.level)
		x.shed(&shed{outcome: wire.OutcomeShedOverload, status: http.StatusServiceUnavailable,
			retryAfter: retryAfterSeconds(g.agentRetryAfter(plan.level)),
			msg:        fmt.Sprintf("overload level red: complex agent task dropped (agent.red_drop_share %g)", g.cfg.Agent.RedDropShare)})
		return
	}
	per := ar.SubTokens()
	if g.overRequestCap(x, per, ar.costField(), func() string {
		return fmt.Sprintf("one sub-call: prompt ≈ %d + max_tokens %d", per-int64(ar.MaxTokens), ar.MaxTokens)
	}) {
		return
	}
	plan = g.fitPlan(plan, per, g.budget.RequestCapFor(x.id.Priority))
	t, s := g.admit(x.ctx, x.id, routeAgent, plan.tokens(per), 0, time.Now())
	if s != nil {
		switch {
		case s.black && g.on(defFallback):
			g.countTask(wire.AgentTaskFallback, plan.level)
		case s.outcome == wire.OutcomeTimeout: // the deadline passed in the store or the queue
			g.countTask(wire.AgentTaskTimeout, plan.level)
		default:
			g.countTask(wire.AgentTaskShed, plan.level)
		}
		x.shedOrFallback(s, false)
		return
	}
	defer g.release(&t, admit.Sample{}) // a panic before the task's release: give t back (after it: a no-op)
	if !g.reserveAgent(&t, &plan, per) {
		g.refuse(&t)
		g.countTask(wire.AgentTaskShed, plan.level)
		x.shed(&shed{outcome: wire.OutcomeShedBudget, status: http.StatusServiceUnavailable, retryAfter: retryAfterOf(&g.budgetHolds),
			msg: fmt.Sprintf("token budget exhausted for %s: not even one sub-call of %d tokens fits", x.id.Priority, per)})
		return
	}
	g.runAgent(x, &t, ar, plan, per)
}

// tokens is the plan's estimate: steps × width sub-calls of per tokens.
func (p agentPlan) tokens(per int64) int64 { return per * int64(p.steps) * int64(p.width) }

// shallower returns the next smaller plan (seed 004: from full depth to
// the core sub-calls of a couple of steps, to a single-step answer), and
// false when p is already one sub-call.
func (g *Gateway) shallower(p agentPlan) (agentPlan, bool) {
	a := g.cfg.Agent
	switch {
	case p.steps > a.YellowDepth || p.width > a.YellowFanOut:
		p.steps, p.width = min(p.steps, a.YellowDepth), min(p.width, a.YellowFanOut)
	case p.steps > 1 || p.width > a.RedFanOut:
		p.steps, p.width = 1, min(p.width, a.RedFanOut)
	case p.width > 1:
		p.width = 1
	default:
		return p, false
	}
	return p, true
}

// fitPlan makes p shallower until its estimate is within the per-request
// cap (the budget defense on); one sub-call fits (checked before).
func (g *Gateway) fitPlan(p agentPlan, per, capTokens int64) agentPlan {
	for g.on(defBudget) && p.tokens(per) > capTokens {
		next, ok := g.shallower(p)
		if !ok {
			break
		}
		p = next
	}
	return p
}

// reserveAgent reserves the plan's tokens in the budget, making the plan
// shallower while it does not fit (seed 004: when the budget runs low,
// complex tasks get a single-step answer rather than none); false when
// not even one sub-call fits.
func (g *Gateway) reserveAgent(t *ticket, p *agentPlan, per int64) bool {
	if !g.on(defBudget) {
		g.m.tokensReserved[t.prio].Add(float64(p.tokens(per)))
		return true
	}
	for {
		est := p.tokens(per)
		if g.budget.Reserve(t.prio, est) == nil {
			t.tokens, t.heldAt = est, time.Now()
			g.m.tokensReserved[t.prio].Add(float64(est))
			return true
		}
		next, ok := g.shallower(*p)
		if !ok {
			return false
		}
		*p = next
	}
}

// agentRetryAfter is the Retry-After of an agent task refused at level
// lvl (red drops complex tasks, black makes no model calls): the time the
// guard's shed level needs to fall below lvl at its fastest, 0 when the
// guard is below it already (black because too many nodes are down:
// their health checks, not the guard, decide).
func (g *Gateway) agentRetryAfter(lvl admit.Level) time.Duration {
	if lvl <= admit.Green {
		return 0
	}
	return g.guard.RetryAfter(admit.Priority(admit.NumPriorities - int(lvl)))
}

// agentRules answers a task at black: the rules, no model call (with the
// fallback defense on), else a shed.
func (g *Gateway) agentRules(x *exchange, lvl admit.Level) {
	if !g.on(defFallback) {
		g.countTask(wire.AgentTaskShed, lvl)
		x.shed(&shed{outcome: wire.OutcomeShedOverload, status: http.StatusServiceUnavailable, black: true,
			retryAfter: retryAfterSeconds(g.agentRetryAfter(lvl)),
			msg:        "agent level black: no model calls, and the fallback defense is off"})
		return
	}
	g.countTask(wire.AgentTaskFallback, lvl)
	g.m.subcalls.with(wire.SubcallSkipped).Add(float64(g.cfg.Agent.FanOut))
	x.fallback(wire.FallbackRules)
}

// agentRun is what a task's steps produced.
type agentRun struct {
	steps, okN, failed, timeouts int
	used                         int64
	parts                        []string // the last completed step's answers
}

// runAgent runs an admitted task's steps and answers it.
func (g *Gateway) runAgent(x *exchange, t *ticket, ar AgentRequest, plan agentPlan, per int64) {
	k := g.cfg.Agent.FanOut
	n := g.subcalls.reserve(plan.width, g.on(defBudget))
	defer g.subcalls.unreserve(n)
	g.m.subcalls.with(wire.SubcallSkipped).Add(float64((k - plan.width) * plan.steps))
	g.m.subcalls.with(wire.SubcallCapped).Add(float64((plan.width - n) * plan.steps))
	g.giveBudget(t, int64(plan.width-n)*int64(plan.steps)*per)
	if n == 0 {
		g.refuse(t)
		g.countTask(wire.AgentTaskShed, plan.level)
		x.shed(&shed{outcome: wire.OutcomeShedBudget, status: http.StatusServiceUnavailable, retryAfter: retryAfterOf(&g.budgetHolds),
			msg: "agent amplification cap and sub-call queue full (agent.max_subcalls_inflight, agent.queue_size)"})
		return
	}
	start := time.Now()
	prompt := jsonString(ar.Prompt)
	var run agentRun
	for step := 1; step <= plan.steps; step++ {
		r := g.runStep(x, prompt, ar.MaxTokens, step, plan.steps, n, per)
		g.giveBudget(t, int64(n)*per)
		run.okN += r.okN
		run.failed += r.failed
		run.timeouts += r.timeouts
		run.used += r.used
		if r.okN == 0 || x.timedOut() {
			break
		}
		run.steps, run.parts = step, r.parts
	}
	g.releaseCall(t, callResult{rtt: time.Since(start), dropped: run.steps == 0, used: run.used, hasUsage: true})
	g.answerAgent(x, ar, plan, n, run)
}

// answerAgent answers a task from what its steps produced.
func (g *Gateway) answerAgent(x *exchange, ar AgentRequest, plan agentPlan, n int, run agentRun) {
	if run.steps > 0 && !x.timedOut() {
		degraded := run.steps < ar.Steps || n < g.cfg.Agent.FanOut || run.failed+run.timeouts > 0
		result := wire.AgentTaskOK
		if degraded {
			result = wire.AgentTaskDegraded
		}
		g.countTask(result, plan.level)
		x.reply(wire.OutcomeOK, map[string]any{
			"answer": strings.Join(run.parts, "\n"), "steps": run.steps, "steps_asked": ar.Steps,
			"fan_out": n, "subcalls_ok": run.okN, "level": plan.level.String(), "degraded": degraded,
			"usage": map[string]int64{"total_tokens": run.used}, wire.FieldFallback: false,
		})
		return
	}
	if x.timedOut() || run.failed == 0 {
		g.countTask(wire.AgentTaskTimeout, plan.level)
		x.fail(http.StatusGatewayTimeout, wire.OutcomeTimeout, "", "no step of the agent task completed within the deadline")
		return
	}
	if g.on(defFallback) {
		g.countTask(wire.AgentTaskFallback, plan.level)
	} else {
		g.countTask(wire.AgentTaskError, plan.level)
	}
	x.upstreamFailed(http.StatusBadGateway, "every agent sub-call of the first step failed", false, 0)
}

// stepResult is one step's sub-calls.
type stepResult struct {
	okN, failed, timeouts int
	used                  int64
	parts                 []string
}

// runStep runs one step's n sub-calls in parallel, each taking a run slot
// of the sub-call pool first.
func (g *Gateway) runStep(x *exchange, prompt []byte, maxTokens, step, steps, n int, per int64) stepResult {
	results := make([]subResult, n)
	bounded := g.on(defBudget)
	var wg sync.WaitGroup
	for i := range n {
		body := subcallBody(prompt, maxTokens, step, steps, i+1, n)
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil { // a bug must not take the process down
					g.log.Error("gateway: panic in agent sub-call", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					results[i] = subResult{}
				}
			}()
			results[i] = g.subcall(x, body, bounded)
		})
	}
	wg.Wait()
	var r stepResult
	for _, s := range results {
		switch {
		case s.ok:
			r.okN++
			r.parts = append(r.parts, s.content)
			g.m.subcalls.with(wire.SubcallOK).Inc()
		case s.timeout:
			r.timeouts++
			g.m.subcalls.with(wire.SubcallTimeout).Inc()
		default:
			r.failed++
			g.m.subcalls.with(wire.SubcallError).Inc()
		}
		if s.hasUsage {
			r.used += s.used
		} else {
			r.used += per // sent but not reported: the estimate stands
		}
	}
	return r
}

// giveBudget returns n of t's budget tokens early (an agent task's share
// of a step that has ended, or of sub-calls it could not place).
func (g *Gateway) giveBudget(t *ticket, n int64) {
	n = min(n, t.tokens)
	if n > 0 {
		g.budget.Release(n)
		t.tokens -= n
	}
}

// subcallBody is one sub-call's chat body. The prompt is JSON-encoded once
// per task, without HTML escaping (json.Marshal would turn every < into
// six bytes), and shared by every sub-call.
func subcallBody(prompt []byte, maxTokens, step, steps, i, n int) []byte {
	b := make([]byte, 0, len(prompt)+128)
	b = append(b, `{"messages":[{"role":"system","content":"tool call: step `...)
	b = strconv.AppendInt(b, int64(step), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(steps), 10)
	b = append(b, ", sub-call "...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `"},{"role":"user","content":`...)
	b = append(b, prompt...)
	b = append(b, `}],"max_tokens":`...)
	b = strconv.AppendInt(b, int64(maxTokens), 10)
	return append(b, '}')
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// subResult is one agent sub-call's result.
type subResult struct {
	ok       bool
	timeout  bool
	content  string
	used     int64 // tokens the answer's usage reported, when hasUsage
	hasUsage bool
}

// subcall makes one agent sub-call, holding a run slot of the sub-call
// pool (bounded: the amplification cap), and extracts the answer's text.
// A sub-call that every node refused (429) waits for a slot again and
// goes again (subcallPool.requeue), as an ordinary call waits for a place
// again (see requeue), while the retry defense retries refusals: within
// the task's deadline, a wait for another sub-call to end costing no
// retry token and a sub-call with none running to wait for paying one. A
// refusal that stands is judged by the deadline then, as requeue judges
// an ordinary call's: a timeout once it has passed, else an error.
func (g *Gateway) subcall(x *exchange, body []byte, bounded bool) subResult {
	if !g.subcalls.acquire(x.ctx, bounded) {
		return subResult{timeout: true}
	}
	held := true
	defer func() {
		if held {
			g.subcalls.done()
		}
	}()
	resp, res, o, err := g.callModel(x.ctx, x.id.Priority, wire.CallAgentSubcall, wire.PathChat, body)
	for err != nil && res.refused && g.pool.Requeues() && !deadlinePassed(x.ctx, time.Now()) {
		prio := int(x.id.Priority)
		if held = g.subcalls.requeue(x.ctx, bounded, func() bool { return g.payRequeue(prio, res) }); !held {
			break
		}
		resp, res, o, err = g.callModel(x.ctx, x.id.Priority, wire.CallAgentSubcall, wire.PathChat, body)
	}
	if err != nil {
		return subResult{timeout: o == wire.OutcomeTimeout || (res.refused && deadlinePassed(x.ctx, time.Now()))}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return subResult{}
	}
	b, err := readAnswer(resp, maxUpstreamBody, "")
	if err != nil {
		return subResult{timeout: x.timedOut()}
	}
	var ans struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(b, &ans) != nil || len(ans.Choices) == 0 {
		return subResult{}
	}
	r := subResult{ok: true, content: ans.Choices[0].Message.Content}
	if u, ok := openai.AnswerUsage(b); ok {
		r.used, r.hasUsage = u.Total(), true
	}
	return r
}
