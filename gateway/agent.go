package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/wire"
)

// agentPlan is how deep one agent request may go.
type agentPlan struct {
	depth int  // sub-calls wanted
	rules bool // answer by rules (fallback), no model
}

// planAgent degrades the fan-out by overload level (seed 004): green the
// full K, yellow agent.yellow_fan_out, red agent.red_fan_out with
// agent.red_rules_share of complex requests answered by rules only. Black
// never gets here (admission answers it with the fallback). Without the
// guard the depth is always K.
func (g *Gateway) planAgent(complex bool) agentPlan {
	a := g.cfg.Agent
	if !g.on(defGuard) {
		return agentPlan{depth: a.FanOut}
	}
	switch g.guard.Level() {
	case admit.Green:
		return agentPlan{depth: a.FanOut}
	case admit.Yellow:
		return agentPlan{depth: a.YellowFanOut}
	}
	p := agentPlan{depth: a.RedFanOut}
	if complex && a.RedRulesShare > 0 {
		// Deterministic share: of every 1000 complex requests at red, the
		// first share×1000 of each block are answered by rules.
		n := g.agentSeq.Add(1) - 1
		p.rules = float64(n%1000) < a.RedRulesShare*1000
	}
	return p
}

// reserveSubcalls takes up to want sub-call places under the
// amplification cap (when the budget defense is on) and returns how many
// it got.
func (g *Gateway) reserveSubcalls(want int) int {
	if !g.on(defBudget) {
		g.subInflight.Add(int64(want))
		return want
	}
	for {
		cur, lim := g.subInflight.Load(), g.subCap.Load()
		n := min(int64(want), lim-cur)
		if n <= 0 {
			return 0
		}
		if g.subInflight.CompareAndSwap(cur, cur+n) {
			return int(n)
		}
	}
}

// subResult is one agent sub-call's result.
type subResult struct {
	ok      bool
	timeout bool
	content string
}

// serveAgent is POST /v1/agent: one request fans out into parallel model
// sub-calls (seed 004), bounded by the amplification cap and degraded by
// the overload level.
func (g *Gateway) serveAgent(x *exchange) {
	body, ok := x.readBody()
	if !ok {
		return
	}
	ar, err := ParseAgentRequest(body)
	if err != nil {
		x.badRequest(err)
		return
	}
	k := g.cfg.Agent.FanOut
	per := ar.SubTokens()
	plan := g.planAgent(per*int64(k) >= g.cfg.Agent.ComplexTokens)
	t, s := g.admitRequest(x.ctx, x.id, routeAgent, per*int64(plan.depth), time.Now())
	if s != nil {
		x.shedOrFallback(s, false)
		return
	}
	if plan.rules && g.on(defFallback) {
		g.release(&t, admit.Sample{})
		g.m.subcalls.WithLabelValues(wire.SubcallSkipped).Add(float64(k))
		x.fallback(wire.FallbackRules)
		return
	}
	n := g.reserveSubcalls(plan.depth)
	if skipped := k - plan.depth; skipped > 0 {
		g.m.subcalls.WithLabelValues(wire.SubcallSkipped).Add(float64(skipped))
	}
	if capped := plan.depth - n; capped > 0 {
		g.m.subcalls.WithLabelValues(wire.SubcallCapped).Add(float64(capped))
	}
	if n == 0 {
		g.release(&t, admit.Sample{})
		x.shed(&shed{outcome: wire.OutcomeShedBudget, status: http.StatusServiceUnavailable, msg: "agent amplification cap reached"})
		return
	}
	start := time.Now()
	results := make([]subResult, n)
	var wg sync.WaitGroup
	for i := range n {
		sub, _ := json.Marshal(map[string]any{
			"messages":   []any{map[string]any{"role": "user", "content": "step " + strconv.Itoa(i+1) + "/" + strconv.Itoa(n) + ": " + ar.Prompt}},
			"max_tokens": ar.MaxTokens,
		})
		wg.Go(func() {
			defer g.subInflight.Add(-1)
			defer func() {
				if v := recover(); v != nil { // a bug must not take the process down
					g.log.Error("gateway: panic in agent sub-call", "panic", v)
					results[i] = subResult{}
				}
			}()
			results[i] = g.subcall(x, sub)
		})
	}
	wg.Wait()
	var okN, timeouts int
	var parts []string
	for _, r := range results {
		switch {
		case r.ok:
			okN++
			parts = append(parts, r.content)
			g.m.subcalls.WithLabelValues(wire.SubcallOK).Inc()
		case r.timeout:
			timeouts++
			g.m.subcalls.WithLabelValues(wire.SubcallTimeout).Inc()
		default:
			g.m.subcalls.WithLabelValues(wire.SubcallError).Inc()
		}
	}
	g.release(&t, admit.Sample{RTT: time.Since(start), Dropped: okN == 0})
	switch {
	case okN > 0:
		x.reply(wire.OutcomeOK, map[string]any{
			"answer": strings.Join(parts, "\n"), "depth": n, "fan_out": k,
			"subcalls_ok": okN, "degraded": n < k, wire.FieldFallback: false,
		})
	case x.timedOut() || timeouts == n:
		x.fail(http.StatusGatewayTimeout, wire.OutcomeTimeout, "", "no sub-call answered within the deadline")
	default:
		x.upstreamFailed(http.StatusBadGateway, "every agent sub-call failed", false)
	}
}

// subcall makes one agent sub-call and extracts the answer's text.
func (g *Gateway) subcall(x *exchange, body []byte) subResult {
	resp, _, o, err := g.callModel(x.ctx, x.id.Priority, wire.CallAgentSubcall, wire.PathChat, body)
	if err != nil {
		return subResult{timeout: o == wire.OutcomeTimeout}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return subResult{}
	}
	b, err := readAnswer(resp)
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
	return subResult{ok: true, content: ans.Choices[0].Message.Content}
}
