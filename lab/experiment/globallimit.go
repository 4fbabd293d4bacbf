package experiment

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

// GlobalLimit is the rate limit one priority's tenant has in all, over
// every gateway: what the gateways together should let through while the
// tenant offers more.
type GlobalLimit struct {
	// RPS is the limit as a rate: a sliding window's Limit / Window, a
	// token bucket's replenish rate.
	RPS float64 `json:"rps"`
	// Span is the time over which the limit holds exactly (a sliding
	// window's Window, a token bucket's Burst / rate), at least a second:
	// admissions are compared with RPS × Span over spans this long.
	Span Duration `json:"span"`
	// Rule says which rule it is, for people.
	Rule string `json:"rule"`
	// Exact is the rule itself, for a reference limiter that decides
	// exactly, in one place, on the same arrivals (load.Config.Reference).
	Exact ratelimit.Rule `json:"-"`
}

// GlobalLimits returns, per priority, the rate limit the experiment's
// gateways give that priority's tenant, for the priorities whose traffic
// one rule with cost "requests" covers in one bucket (every route the mix
// sends for it resolves to the same rule and store key, as the gateway
// resolves rules: tenant+route, tenant+"*", "*"+route, "*"+"*"). Others
// (no rule, per-route buckets, cost in tokens) are left out: their
// admissions have no single number to be compared with. The experiment
// must be normalized; nil when the gateway config does not build.
func (e *Experiment) GlobalLimits() map[string]GlobalLimit {
	// A stand-in admin token (the rules depend on none of it).
	const token = "global-limits-stand-in"
	cfg, _, err := e.GatewayConfig(GatewayParams{
		Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Token: token,
		Keys: APIKeys(token), Gateways: e.Gateway.Count,
		Nodes: []string{"127.0.0.1:1"}, // the rules do not depend on the nodes, but a config needs one
	})
	if err != nil {
		return nil
	}
	type pair struct{ t, r string }
	idx := map[pair]int{}
	for i, rc := range cfg.RateLimit.Rules {
		idx[pair{rc.Tenant, rc.Route}] = i
	}
	// bucket is a resolved rule: its index and the route of its key ("*"
	// shares one bucket over every route).
	type bucket struct {
		rule  int
		route string
	}
	out := map[string]GlobalLimit{}
	for _, p := range priorities() {
		tenant := "tenant-" + strings.ToLower(p)
		var one *bucket
		simple := true
		for _, route := range e.mixRoutes(p) {
			var b *bucket
			for _, c := range []pair{{tenant, route}, {tenant, "*"}, {"*", route}, {"*", "*"}} {
				if i, hit := idx[c]; hit {
					b = &bucket{rule: i, route: c.r}
					break
				}
			}
			if b == nil || (one != nil && *b != *one) {
				simple = false
				break
			}
			one = b
		}
		if !simple || one == nil || cfg.RateLimit.Rules[one.rule].Cost == gateway.CostTokens {
			continue
		}
		if l, ok := limitOf(cfg.RateLimit.Rules[one.rule]); ok {
			out[p] = l
		}
	}
	return out
}

// limitOf is a rule as a rate and its span.
func limitOf(rc gateway.RuleConfig) (GlobalLimit, bool) {
	switch rc.Algorithm {
	case ratelimit.SlidingWindow:
		w := rc.Window
		if w == 0 {
			w = time.Duration(rc.WindowMs) * time.Millisecond
		}
		if w <= 0 || rc.Limit < 1 {
			return GlobalLimit{}, false
		}
		return GlobalLimit{
			RPS:   float64(rc.Limit) / w.Seconds(),
			Span:  Duration(max(w, time.Second)),
			Rule:  fmt.Sprintf("sliding window %d / %v", rc.Limit, w),
			Exact: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: int64(rc.Limit), Window: w},
		}, true
	case ratelimit.TokenBucket:
		if !(rc.ReplenishRate > 0) || rc.Burst < 1 {
			return GlobalLimit{}, false
		}
		span := time.Duration(math.Ceil(float64(rc.Burst) / rc.ReplenishRate * float64(time.Second)))
		return GlobalLimit{
			RPS:   rc.ReplenishRate,
			Span:  Duration(max(span, time.Second)),
			Rule:  fmt.Sprintf("token bucket %g/s, burst %d", rc.ReplenishRate, rc.Burst),
			Exact: ratelimit.Rule{Algorithm: ratelimit.TokenBucket, ReplenishRate: rc.ReplenishRate, Burst: int64(rc.Burst)},
		}, true
	}
	return GlobalLimit{}, false
}

// mixRoutes are the gateway routes priority p's traffic goes to (a chat
// stream is the chat route).
func (e *Experiment) mixRoutes(p string) []string {
	routes := e.Mix.Routes
	if r, ok := e.Mix.RoutesByPriority[p]; ok {
		routes = r
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range Routes {
		if routes[r] <= 0 {
			continue
		}
		r = wire.LoadRouteGateway(r)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
