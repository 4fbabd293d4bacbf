package gateway

import (
	"errors"
	"strings"
	"testing"
)

// TestRateLimitRuleBounds: rules the Redis scripts cannot compute — a rate
// of 2^63, a burst of 1e17 (beyond a double's exact integers), a window
// under a microsecond (0 µs on Redis: no limit at all) or under the 1 ms
// floor, a bucket taking longer than a year to refill (its expiry in
// milliseconds is an integer Redis refuses) — are refused at load with
// the field and its line, and by PUT /admin/limits with the field; the
// edges of the bounds load.
func TestRateLimitRuleBounds(t *testing.T) {
	const head = "upstream:\n  nodes: [\"127.0.0.1:9\"]\nratelimit:\n  rules:\n    - tenant: '*'\n      route: '*'\n      cost: requests\n"
	for _, tc := range []struct {
		name, rule, field, msg string
	}{
		{"rate 2^63", "algorithm: token_bucket, replenish_rate: 9.3e18, burst: 10", "replenish_rate", "(got 9.3e+18)"},
		{"burst 1e17", "algorithm: token_bucket, replenish_rate: 1e9, burst: 100000000000000000", "burst", "(got 100000000000000000)"},
		{"limit 1e17", "algorithm: sliding_window, limit: 100000000000000000, window: 1s", "limit", "(got 100000000000000000)"},
		{"window 500ns", "algorithm: sliding_window, limit: 5, window: 500ns", "window", "[1ms, 24h0m0s] (got 500ns)"},
		{"window 999µs", "algorithm: sliding_window, limit: 5, window: 999us", "window", "(got 999µs)"},
		{"window 25h", "algorithm: sliding_window, limit: 5, window: 25h", "window", "(got 25h0m0s)"},
		{"refill over a year", "algorithm: token_bucket, replenish_rate: 1e-9, burst: 10", "replenish_rate", "burst / replenish_rate"},
		{"huge burst, slow rate", "algorithm: token_bucket, replenish_rate: 1, burst: 1125899906842624", "replenish_rate", "within 8760h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := head + "      " + strings.ReplaceAll(tc.rule, ", ", "\n      ") + "\n"
			_, err := ParseConfig([]byte(y))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if want := "ratelimit.rules[0]." + tc.field; ce.Field != want {
				t.Errorf("field %q, want %q (%v)", ce.Field, want, err)
			}
			// The key's own line: rules[0] starts on line 5, its keys from
			// line 8 on (after tenant, route, cost) in the order of tc.rule.
			want := 0
			for i, kv := range strings.Split(tc.rule, ", ") {
				if strings.HasPrefix(kv, tc.field+":") {
					want = 8 + i
				}
			}
			if ce.Line != want {
				t.Errorf("line %d, want %d (%v)\n%s", ce.Line, want, err, y)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%v does not say %q", err, tc.msg)
			}
		})
	}
	for _, rule := range []string{
		"{tenant: '*', route: '*', algorithm: sliding_window, limit: 1125899906842624, window: 24h, cost: requests}",
		"{tenant: '*', route: '*', algorithm: sliding_window, limit: 1, window: 1ms, cost: requests}",
		"{tenant: '*', route: '*', algorithm: token_bucket, replenish_rate: 1125899906842624, burst: 1125899906842624, cost: requests}",
		"{tenant: '*', route: '*', algorithm: token_bucket, replenish_rate: 2.5e-7, burst: 2, cost: requests}",  // a token per 46 days
		"{tenant: '*', route: '*', algorithm: token_bucket, replenish_rate: 0.4, burst: 1000000, cost: tokens}", // a monthly quota
	} {
		if _, err := ParseConfig([]byte("upstream:\n  nodes: [\"127.0.0.1:9\"]\nratelimit:\n  rules:\n    - " + rule + "\n")); err != nil {
			t.Errorf("%s: %v", rule, err)
		}
	}

	fm := newFakeModel(t, 4, 0)
	s := startServer(t, testConfig(fm.addr()))
	for _, tc := range []struct{ rule, field string }{
		{`"algorithm":"token_bucket","replenish_rate":9.3e18,"burst":10`, "replenish_rate"},
		{`"algorithm":"token_bucket","replenish_rate":1e9,"burst":100000000000000000`, "burst"},
		{`"algorithm":"token_bucket","replenish_rate":1e-9,"burst":10`, "replenish_rate"},
		{`"algorithm":"sliding_window","limit":100000000000000000,"window_ms":1000`, "limit"},
		{`"algorithm":"sliding_window","limit":5,"window_ms":86400001`, "window_ms"},
	} {
		a := admin(t, s, "PUT", "/admin/limits", `{"ratelimit":{"rules":[{"tenant":"*","route":"*",`+tc.rule+`}]}}`)
		if a.status != 400 || a.errorField() != "ratelimit.rules[0]."+tc.field {
			t.Errorf("PUT /admin/limits %s: %v; want 400 naming ratelimit.rules[0].%s", tc.rule, a, tc.field)
		}
	}
	if a := admin(t, s, "PUT", "/admin/limits", `{"ratelimit":{"rules":[{"tenant":"*","route":"*","algorithm":"token_bucket","replenish_rate":0.4,"burst":1000000}]}}`); a.status != 200 {
		t.Errorf("PUT /admin/limits with a monthly quota: %v", a)
	}
}
