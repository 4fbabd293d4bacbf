package experiment

import (
	"testing"
	"time"
)

// GlobalLimits finds the one bucket each priority's traffic lands in, as
// the gateway resolves rules, and leaves out priorities whose traffic
// spreads over several buckets or whose cost is in tokens.
func TestGlobalLimits(t *testing.T) {
	const head = "name: x\nduration: 4s\ngateway:\n  count: 3\n  defenses: {ratelimit: true}\n  config:\n    ratelimit:\n      rules:\n"
	for _, tc := range []struct {
		name, mix, rules string
		want             map[string]GlobalLimit
	}{
		{"one sliding window for all", "mix: {routes: {predict: 1}}\n",
			"        - {tenant: \"*\", route: \"*\", algorithm: sliding_window, limit: 100, window: 1s, cost: requests}\n",
			map[string]GlobalLimit{
				"P0": {RPS: 100, Span: Duration(time.Second)}, "P1": {RPS: 100, Span: Duration(time.Second)}, "P2": {RPS: 100, Span: Duration(time.Second)}}},
		{"a token bucket refilling in 2 s", "mix: {routes: {predict: 1}}\n",
			"        - {tenant: \"*\", route: \"*\", algorithm: token_bucket, replenish_rate: 50, burst: 100, cost: requests}\n",
			map[string]GlobalLimit{
				"P0": {RPS: 50, Span: Duration(2 * time.Second)}, "P1": {RPS: 50, Span: Duration(2 * time.Second)}, "P2": {RPS: 50, Span: Duration(2 * time.Second)}}},
		{"a tenant's own rule wins", "mix: {routes: {predict: 1}}\n",
			"        - {tenant: \"*\", route: \"*\", algorithm: sliding_window, limit: 100, window: 1s, cost: requests}\n" +
				"        - {tenant: tenant-p2, route: predict, algorithm: sliding_window, limit: 30, window: 2s, cost: requests}\n",
			map[string]GlobalLimit{
				"P0": {RPS: 100, Span: Duration(time.Second)}, "P1": {RPS: 100, Span: Duration(time.Second)}, "P2": {RPS: 15, Span: Duration(2 * time.Second)}}},
		{"per-route buckets are not one limit", "mix: {routes: {predict: 0.5, chat: 0.5}}\n",
			"        - {tenant: \"*\", route: predict, algorithm: sliding_window, limit: 100, window: 1s, cost: requests}\n" +
				"        - {tenant: \"*\", route: chat, algorithm: sliding_window, limit: 100, window: 1s, cost: requests}\n",
			map[string]GlobalLimit{}},
		{"cost in tokens is not a request rate", "mix: {routes: {predict: 1}}\n",
			"        - {tenant: \"*\", route: \"*\", algorithm: sliding_window, limit: 100000, window: 1s, cost: tokens}\n",
			map[string]GlobalLimit{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ParseExperiment([]byte(head + tc.rules + tc.mix))
			if err != nil {
				t.Fatal(err)
			}
			got := e.GlobalLimits()
			if len(got) != len(tc.want) {
				t.Fatalf("limits %+v, want %+v", got, tc.want)
			}
			for p, w := range tc.want {
				g := got[p]
				if g.RPS != w.RPS || g.Span != w.Span || g.Rule == "" {
					t.Errorf("%s: %+v, want %+v", p, g, w)
				}
				// The exact rule gives the same rate: a reference limiter
				// built from it limits what the summary compares with.
				if err := g.Exact.Validate(); err != nil {
					t.Errorf("%s: exact rule: %v", p, err)
				}
				rate := g.Exact.ReplenishRate
				if g.Exact.Window > 0 {
					rate = float64(g.Exact.Limit) / g.Exact.Window.Seconds()
				}
				if rate != w.RPS {
					t.Errorf("%s: exact rule %+v is %g/s, want %g/s", p, g.Exact, rate, w.RPS)
				}
			}
		})
	}
}
