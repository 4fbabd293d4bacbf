package experiment

import (
	"math"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, y string) *Experiment {
	t.Helper()
	e, err := ParseExperiment([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		name, expr string
		v          float64
		pass       bool
		err        string
	}{
		{"p0_success_rate", ">= 0.999", 0.9995, true, ""},
		{"p0_success_rate", ">= 0.999", 0.998, false, ""},
		{"unaccounted", "== 0", 0, true, ""},
		{"unaccounted", "==0", 1, false, ""},
		{"oom_kills", "<= 2", 3, false, ""},
		{"goodput_ratio", "> 0.9", 0.9, false, ""},
		{"goodput_ratio", "< 0.5", 0.4, true, ""},
		{"lag_p99_ms", "!= 0", 5, true, ""},
		{"lag_p99_ms", ">= 1", math.NaN(), false, ""},
		{"limit_settle_s", "<= 5", math.Inf(1), false, ""},
		{"limit_settle_s", "> 5", math.Inf(1), true, ""},
		{"happiness", ">= 1", 0, false, "unknown metric"},
		{"unaccounted", "= 0", 0, false, "want one of"},
		{"unaccounted", ">= zero", 0, false, "want OP NUMBER"},
		{"unaccounted", ">= NaN", 0, false, "want OP NUMBER"},
		{"unaccounted", "", 0, false, "want one of"},
	}
	for _, tt := range tests {
		th, err := ParseThreshold(tt.name, tt.expr)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s %q: err %v, want %q", tt.name, tt.expr, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", tt.name, tt.expr, err)
			continue
		}
		if got := th.Check(tt.v); got != tt.pass {
			t.Errorf("%s %q on %v: %v, want %v", tt.name, tt.expr, tt.v, got, tt.pass)
		}
	}
}

func TestGatewayConfig(t *testing.T) {
	e := mustParse(t, `
name: g
duration: 1s
gateway:
  count: 2
  defenses: {guard: false}
  limits: {classes: {ai: {algorithm: gradient, limit: 30, min: 2, max: 90, queue_size: 7, queue_timeout_ms: 250}}, token_budget: 5000}
  guard: {lag_probe_p99_ms: {yellow: 10, red: 20, black: 30}}
  config: {unknown_key: reject, upstream: {retry_budget: {ratio: 0.2}}}
`)
	cfg, b, err := e.GatewayConfig(GatewayParams{
		Listen: "127.0.0.1:1000", Admin: "127.0.0.1:1001", Token: "tok-0123456789abcdef",
		Nodes: []string{"127.0.0.1:2000", "127.0.0.1:2001"}, Keys: APIKeys("tok"),
		Defenses: e.Gateway.Defenses, Gateways: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for _, want := range []string{"queue_timeout: 250ms", "algorithm: gradient", "token_budget: 5000", "unknown_key: reject", "ratio: 0.2", "127.0.0.1:2001", "lab-p0-tok", "share: 0.5", "guard: false", "yellow: 10"} {
		if !strings.Contains(y, want) {
			t.Errorf("config lacks %q:\n%s", want, y)
		}
	}
	if !strings.Contains(y, "admin_token: tok-0123456789abcdef") {
		t.Errorf("config lacks the admin token:\n%s", y)
	}
	// The typed config is what the gateway will run with.
	if cfg.AdminToken != "tok-0123456789abcdef" || len(cfg.Keys) != 3 || len(cfg.Upstream.Nodes) != 2 || cfg.Defenses.Guard ||
		cfg.RateLimit.Store.Share != 0.5 || cfg.Classes.AI.QueueTimeout != 250*time.Millisecond || cfg.TokenBudget != 5000 {
		t.Errorf("typed config %+v", cfg)
	}
	bad := e.Clone()
	bad.Gateway.Config = map[string]any{"classes": map[string]any{"ai": map[string]any{"limit": 1000}}}
	if _, _, err := bad.GatewayConfig(GatewayParams{Listen: "127.0.0.1:1", Admin: "127.0.0.1:2", Nodes: []string{"127.0.0.1:1"}}); err == nil || !strings.Contains(err.Error(), "classes.ai.limit") {
		t.Errorf("bad config: %v", err)
	}
	if _, err := limitsToConfig(map[string]any{"speed": 1}); err == nil {
		t.Error("unknown limits key accepted")
	}
}

func TestMergeInto(t *testing.T) {
	dst := map[string]any{"a": map[string]any{"b": 1, "c": 2}, "d": 3}
	MergeInto(dst, map[string]any{"a": map[string]any{"c": 9, "e": 5}, "d": map[string]any{"x": 1}})
	a := dst["a"].(map[string]any)
	if a["b"] != 1 || a["c"] != 9 || a["e"] != 5 {
		t.Errorf("nested merge %v", a)
	}
	if _, ok := dst["d"].(map[string]any); !ok {
		t.Errorf("replace %v", dst["d"])
	}
}
