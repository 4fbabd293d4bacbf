package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

// Tokens (seed 004): a model request reserves its estimated tokens before
// the call — in the in-flight budget (by priority) and in a token-cost
// rate limit — and settles with the real usage after it: the answer's
// usage, a stream's usage chunk, or the chunks counted on the stream. The
// budget gets every reserved token back when the request ends (it bounds
// tokens in flight); a token bucket gets the difference back (or is
// charged the overuse), since what it bounds is tokens spent.

// rateLimit applies the rule matching id and r, if any. A token-cost rule
// charges the estimate and remembers it in t for settlement. A store
// error once ctx ended is a timeout (504), whatever fail_open says: the
// request's deadline, not the store, stopped the decision.
func (g *Gateway) rateLimit(ctx context.Context, t *ticket, id Identity, r routeID, tokens int64, now time.Time) *shed {
	e := g.rules.Load().lookup(id.tid, r)
	if e == nil {
		return nil
	}
	cost := int64(1)
	if e.tokens {
		cost = max(tokens, 1)
	}
	d, err := g.store.Allow(ctx, e.key, e.rule, cost, now)
	if err != nil {
		if errors.Is(err, ratelimit.ErrCostExceedsCapacity) {
			// It could never pass, whatever the load: the client's
			// request to change, not a 429 to retry (as overRequestCap).
			return &shed{outcome: wire.OutcomeError, status: http.StatusBadRequest, code: wire.CodeCostExceedsLimit,
				msg: fmt.Sprintf("request cost %d exceeds the rate limit's capacity %d: it can never pass; lower its tokens (prompt, max_tokens)", cost, e.rule.Capacity())}
		}
		if ctx.Err() != nil {
			// The request's deadline passed (or its client left) while
			// the store decided: a timeout, as in the bulkhead's queue,
			// not the store's failure.
			return &shed{outcome: wire.OutcomeTimeout, status: http.StatusGatewayTimeout, msg: "deadline passed while rate limiting"}
		}
		if g.cfg.RateLimit.Store.FailOpen {
			return nil
		}
		return &shed{outcome: wire.OutcomeShedRateLimit, status: http.StatusTooManyRequests, retryAfter: 1, code: wire.CodeRateLimitStore, msg: "rate limit store unavailable (fail closed)"}
	}
	if !d.Allowed && d.Unavailable {
		return &shed{outcome: wire.OutcomeShedRateLimit, status: http.StatusTooManyRequests,
			retryAfter: max(1, ratelimit.RetryAfterSeconds(d.RetryAfter)), code: wire.CodeRateLimitStore, msg: "rate limit store unavailable (fail closed)"}
	}
	if !d.Allowed {
		return &shed{outcome: wire.OutcomeShedRateLimit, status: http.StatusTooManyRequests,
			retryAfter: max(1, ratelimit.RetryAfterSeconds(d.RetryAfter)), msg: "rate limit exceeded"}
	}
	if e.tokens && e.rule.Algorithm == ratelimit.TokenBucket {
		t.rl, t.rlCost = e, cost
	}
	return nil
}

// reserveBudget reserves tokens for priority p when the budget defense is
// on, from now (a reading of the clock just taken), and counts the
// reservation.
func (g *Gateway) reserveBudget(t *ticket, p admit.Priority, tokens int64, now time.Time) *shed {
	if tokens <= 0 {
		return nil
	}
	if g.on(defBudget) {
		if err := g.budget.Reserve(p, tokens); err != nil {
			return &shed{outcome: wire.OutcomeShedBudget, status: http.StatusServiceUnavailable, retryAfter: retryAfterOf(&g.budgetHolds),
				msg: fmt.Sprintf("token budget exhausted for %s: %d tokens in flight, %s may fill %d of %d", p, g.budget.Inflight(), p, g.budget.Ceiling(p), g.budget.Capacity())}
		}
		t.tokens, t.heldAt = tokens, now
	}
	g.m.tokensReserved[p].Add(float64(tokens))
	return nil
}

// overRequestCap answers 400 and reports true when a request's estimate
// exceeds the most one request of its priority may take of the budget
// (the budget defense on): the per-request cap, or the priority's
// ceiling when the reserves held for more important priorities leave it
// less (admit.Budget.RequestCapFor). Such a request could never pass,
// whatever the load. field names the request field to blame; what says
// what the estimate is made of (called only then: most requests pass).
func (g *Gateway) overRequestCap(x *exchange, tokens int64, field string, what func() string) bool {
	p := x.id.Priority
	capTokens := g.budget.RequestCapFor(p)
	if !g.on(defBudget) || tokens <= capTokens {
		return false
	}
	why := fmt.Sprintf("the per-request cap of %d tokens (budget.max_request_tokens)", capTokens)
	if capTokens < g.budget.RequestCap() {
		held := "budget.reserve_p0"
		if p == admit.P2 {
			held += " and budget.reserve_p1"
		}
		why = fmt.Sprintf("the %d tokens a %s request may ever hold of the token budget of %d (%s held for more important priorities)", capTokens, p, g.budget.Capacity(), held)
	}
	x.failCode(http.StatusBadRequest, wire.OutcomeError, wire.CodeCostExceedsLimit, field, fmt.Sprintf("estimated cost %d tokens (%s) exceeds %s", tokens, what(), why))
	return true
}

// release gives back what admitRequest took; s (RTT > 0) feeds the
// limiter. The token estimate stands (see releaseCall).
func (g *Gateway) release(t *ticket, s admit.Sample) {
	t.permit.Release(s)
	g.settle(t, 0, false, s.End)
}

// releaseCall releases t after a model call, settling the token estimate
// with the usage the call reported.
func (g *Gateway) releaseCall(t *ticket, res callResult) {
	t.permit.Release(res.sample())
	g.settle(t, res.used, res.hasUsage, res.end)
}

// settle ends t's token reservation at end (a clock reading the caller
// took as the call ended; zero: now): the estimate, or the usage when
// known, is counted as used; the budget's tokens return; a token-cost
// bucket is settled with the difference. t holds nothing before the
// store is called, so a store that fails or panics cannot keep the
// budget's tokens.
func (g *Gateway) settle(t *ticket, used int64, known bool, end time.Time) {
	if !known {
		used = t.estimate
	}
	if t.estimate > 0 || used > 0 {
		g.m.tokensUsed[t.prio].Add(float64(max(used, 0)))
	}
	rl, cost := t.rl, t.rlCost
	g.noteBudgetHold(t, end)
	g.budget.Release(t.tokens)
	t.rl, t.tokens, t.estimate = nil, 0, 0
	if rl != nil && known {
		g.settleRateLimit(rl, used-cost)
	}
}

// noteBudgetHold feeds the budget-hold mean (the Retry-After of budget
// sheds) with how long t held its budget tokens, until end (zero, or a
// reading from before the hold: now).
func (g *Gateway) noteBudgetHold(t *ticket, end time.Time) {
	if t.tokens > 0 && !t.heldAt.IsZero() {
		if end.IsZero() || end.Before(t.heldAt) {
			end = time.Now()
		}
		g.budgetHolds.observe(end.Sub(t.heldAt))
	}
}

// refuse gives back what an admitted request that is then refused
// before any model call holds: its place, its budget tokens and its
// token-cost bucket's charge. It used nothing, so unlike settle nothing
// is counted as used.
func (g *Gateway) refuse(t *ticket) {
	t.permit.Release(admit.Sample{})
	g.refundRateLimit(t)
	g.budget.Release(t.tokens)
	t.tokens, t.estimate = 0, 0
}

// refundRateLimit gives a token-cost bucket back what a request that was
// then refused (guard, bulkhead, budget) was charged: it used nothing.
func (g *Gateway) refundRateLimit(t *ticket) {
	if t.rl != nil {
		g.settleRateLimit(t.rl, -t.rlCost)
		t.rl = nil
	}
}

// settleRateLimit corrects rule e's bucket by delta tokens.
func (g *Gateway) settleRateLimit(e *ruleEntry, delta int64) {
	st, ok := g.store.(ratelimit.Settler)
	if !ok || delta == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(g.cfg.RateLimit.Store.Timeout, time.Millisecond))
	defer cancel()
	_ = st.Settle(ctx, e.key, e.rule, delta, time.Now()) // best effort: the estimate stands
}
