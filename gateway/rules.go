package gateway

import (
	"fmt"
	"slices"

	"github.com/levee-lab/levee/gateway/ratelimit"
)

// ruleTable resolves, for every tenant and route, the most specific rate
// limit rule and its store key. It is immutable; the admin API swaps it.
type ruleTable struct {
	rules   []RuleConfig
	entries [][numRoutes]*ruleEntry // by tenant id
}

// ruleEntry is the resolved rule of one tenant on one route.
type ruleEntry struct {
	rule   ratelimit.Rule
	key    string // store key: tenant and the rule's route ("*" shares one bucket)
	tokens bool   // cost in estimated tokens, not requests
}

// newRuleTable resolves rules for tenants (by tenant id). Rules are
// matched most specific first: tenant+route, tenant+"*", "*"+route, "*"+"*".
// A "*" tenant rule gives each tenant its own bucket; a "*" route rule
// gives the tenant one bucket shared by every route.
func newRuleTable(rules []RuleConfig, tenants []string) (*ruleTable, error) {
	type pair struct{ t, r string }
	idx := make(map[pair]int, len(rules))
	converted := make([]ratelimit.Rule, len(rules))
	for i, rc := range rules {
		r := rc.Rule
		r.Window = rc.window()
		if err := r.Validate(); err != nil {
			return nil, &ConfigError{Field: fmt.Sprintf("ratelimit.rules[%d]", i), Msg: err.Error()}
		}
		converted[i] = r
		idx[pair{rc.Tenant, rc.Route}] = i
	}
	if err := checkRuleTenants(rules, tenants); err != nil {
		return nil, err
	}
	t := &ruleTable{rules: rules, entries: make([][numRoutes]*ruleEntry, len(tenants))}
	for tid, tenant := range tenants {
		for r := range routeOther { // "other" is never limited
			route := routeID(r).String()
			for _, p := range []pair{{tenant, route}, {tenant, "*"}, {"*", route}, {"*", "*"}} {
				i, ok := idx[p]
				if !ok {
					continue
				}
				t.entries[tid][r] = &ruleEntry{
					rule:   converted[i],
					key:    fmt.Sprintf("levee:%s:%s:%d", tenant, p.r, i),
					tokens: rules[i].Cost == CostTokens,
				}
				break
			}
		}
	}
	return t, nil
}

// checkRuleTenants returns a *ConfigError naming the first rule whose
// tenant is neither "*" nor one of tenants (the anonymous tenant first,
// then the API keys' tenants, as newKeyTable lists them): no request
// would ever match it, so a misspelt tenant would leave the tenant it
// meant unlimited without a word.
func checkRuleTenants(rules []RuleConfig, tenants []string) error {
	for i, rc := range rules {
		if rc.Tenant == "*" || slices.Contains(tenants, rc.Tenant) {
			continue
		}
		return &ConfigError{Field: fmt.Sprintf("ratelimit.rules[%d].tenant", i), Msg: fmt.Sprintf(
			"must be \"*\", the anonymous tenant or an API key's tenant (%q): no request would ever match %q", tenants, rc.Tenant)}
	}
	return nil
}

func (t *ruleTable) lookup(tid int, r routeID) *ruleEntry {
	if tid < 0 || tid >= len(t.entries) {
		return nil
	}
	return t.entries[tid][r]
}

// ruleJSON is a rule on the admin API (durations in milliseconds).
type ruleJSON struct {
	Tenant        string  `json:"tenant"`
	Route         string  `json:"route"`
	Algorithm     string  `json:"algorithm"`
	Limit         int64   `json:"limit,omitempty"`
	WindowMs      int64   `json:"window_ms,omitempty"`
	ReplenishRate float64 `json:"replenish_rate,omitempty"`
	Burst         int64   `json:"burst,omitempty"`
	Cost          string  `json:"cost"`
}

func toRuleJSON(r RuleConfig) ruleJSON {
	if r.Cost == "" {
		r.Cost = CostRequests
	}
	return ruleJSON{r.Tenant, r.Route, string(r.Algorithm), r.Limit, r.window().Milliseconds(), r.ReplenishRate, r.Burst, r.Cost}
}

func (r ruleJSON) config() RuleConfig {
	cost := r.Cost
	if cost == "" {
		cost = CostRequests
	}
	return RuleConfig{Tenant: r.Tenant, Route: r.Route, WindowMs: r.WindowMs, Cost: cost, Rule: ratelimit.Rule{
		Algorithm: ratelimit.Algorithm(r.Algorithm), Limit: r.Limit, ReplenishRate: r.ReplenishRate, Burst: r.Burst,
	}}
}
