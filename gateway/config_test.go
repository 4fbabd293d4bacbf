package gateway

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

func TestParseConfigExample(t *testing.T) {
	cfg, err := LoadConfig("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(cfg.Keys); got != 3 {
		t.Errorf("keys: got %d, want 3", got)
	}
	if cfg.RateLimit.Rules[1].Algorithm != ratelimit.TokenBucket || cfg.RateLimit.Rules[1].Burst != 40000 {
		t.Errorf("rule 1: %+v", cfg.RateLimit.Rules[1])
	}
	if cfg.Classes.AI.QueueTimeout != 500*time.Millisecond {
		t.Errorf("ai queue timeout %s", cfg.Classes.AI.QueueTimeout)
	}
	// The example lists the defaults: apart from the keys, rules and nodes
	// it must equal DefaultConfig.
	def := DefaultConfig()
	def.Keys, def.RateLimit.Rules, def.Upstream.Nodes = cfg.Keys, cfg.RateLimit.Rules, cfg.Upstream.Nodes
	if got, want := cfg.Guard, def.Guard; got != want {
		t.Errorf("guard differs from defaults:\n got %+v\nwant %+v", got, want)
	}
	if cfg.Classes != def.Classes || cfg.Agent != def.Agent || cfg.Stream != def.Stream || cfg.Defenses != def.Defenses || cfg.Routes != def.Routes {
		t.Errorf("example.yaml drifted from DefaultConfig")
	}
	if !reflect.DeepEqual(cfg.Upstream, def.Upstream) {
		t.Errorf("upstream differs from defaults:\n got %+v\nwant %+v", cfg.Upstream, def.Upstream)
	}
}

func TestParseConfigPartialKeepsDefaults(t *testing.T) {
	cfg, err := ParseConfig([]byte("upstream:\n  nodes: [\"127.0.0.1:9\"]\nclasses:\n  ai:\n    limit: 8\n    queue_size: 0\ndefenses:\n  bulkhead: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Classes.AI.Limiter.Limit != 8 || cfg.Classes.AI.QueueSize != 0 || cfg.Classes.AI.Limiter.Algorithm != admit.AlgoStatic || cfg.Classes.AI.Limiter.Max != 256 {
		t.Errorf("ai class: %+v", cfg.Classes.AI)
	}
	if cfg.Defenses.Bulkhead || !cfg.Defenses.RateLimit {
		t.Errorf("defenses: %+v", cfg.Defenses)
	}
	if cfg.BodyLimitBytes != 1<<20 {
		t.Errorf("body limit %d", cfg.BodyLimitBytes)
	}
}

func TestParseConfigErrorsNameTheLine(t *testing.T) {
	const nodes = "upstream:\n  nodes: [\"127.0.0.1:9\"]\n"
	for _, tc := range []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"unknown key", nodes + "classes:\n  ai:\n    limt: 8\n", 5, "", "limt"},
		{"type mismatch", nodes + "token_budget: lots\n", 3, "", "lots"},
		{"duration as int", nodes + "drain_timeout: 10\n", 3, "", "time.Duration"},
		{"syntax", nodes + "listen: [\n", 3, "", ""},
		{"invalid value", nodes + "classes:\n  ai:\n    algorithm: static\n    limit: 0\n", 6, "classes.ai.limit", "[min, max]"},
		{"bad priority", nodes + "keys:\n  - key: a\n    tenant: t\n    priority: P0\n  - key: b\n    tenant: u\n    priority: P7\n", 9, "keys[1].priority", "P7"},
		// net/http trims a header value's edges: such a key never matches.
		{"key with a trailing space", nodes + "keys:\n  - {key: \"a \", tenant: t, priority: P0}\n", 4, "keys[0].key", "whitespace"},
		{"key with a control character", nodes + "keys:\n  - {key: \"a\\x01b\", tenant: t, priority: P0}\n", 4, "keys[0].key", "control character"},
		{"dup key", nodes + "keys:\n  - {key: a, tenant: t, priority: P0}\n  - {key: a, tenant: u, priority: P1}\n", 5, "keys[1].key", "duplicate"},
		{"rule without burst", nodes + "ratelimit:\n  rules:\n    - tenant: '*'\n      route: chat\n      algorithm: token_bucket\n      replenish_rate: 5\n      cost: requests\n", 5, "ratelimit.rules[0].burst", "≥ 1"},
		{"bad route", nodes + "ratelimit:\n  rules:\n    - {tenant: '*', route: nope, algorithm: token_bucket, cost: requests}\n", 5, "ratelimit.rules[0].route", "nope"},
		{"window twice", nodes + "ratelimit:\n  rules:\n    - {tenant: '*', route: '*', algorithm: sliding_window, limit: 3, window: 1s, window_ms: 1000, cost: requests}\n", 5, "ratelimit.rules[0].window_ms", "not both"},
		{"no nodes", "listen: 127.0.0.1:0\n", 0, "upstream.nodes", "at least one"},
		{"bad node", "upstream:\n  nodes:\n    - 127.0.0.1:9\n    - nonsense\n", 4, "upstream.nodes[1]", "host:port"},
		{"watermarks out of order", nodes + "guard:\n  queue_fill: {yellow: 0.9, red: 0.5}\n", 4, "guard.queue_fill.red", "lower watermark"},
		{"max_tokens_limit 0", nodes + "max_tokens_limit: 0\n", 3, "max_tokens_limit", "[1, 16777216] (got 0)"},
		{"max_tokens_limit too large", nodes + "max_tokens_limit: 16777217\n", 3, "max_tokens_limit", "(got 16777217)"},
		{"unknown policy", nodes + "unknown_key: maybe\n", 3, "unknown_key", "maybe"},
		{"two documents", nodes + "---\nlisten: x\n", 3, "", "more than one"},
		{"malformed second document", nodes + "---\nlisten: [\n", 4, "", "did not find expected"},
		// yaml.v3 alone would truncate these to 64, 2048 and 5.
		{"fraction in an int", nodes + "agent:\n  queue_size: 64.5\n", 4, "agent.queue_size", "must be an integer, got the number 64.5"},
		{"fraction in a top-level int", nodes + "max_header_bytes: 2048.5\n", 3, "max_header_bytes", "got the number 2048.5"},
		{"fraction in an inline rule", nodes + "ratelimit:\n  rules:\n    - {tenant: '*', route: chat, algorithm: token_bucket, replenish_rate: 5, burst: 5.5, cost: requests}\n", 5, "ratelimit.rules[0].burst", "got the number 5.5"},
		// The parts' own config types: their keys sit where they always did,
		// their extra knobs are checked by the part, with the line of the
		// section when the part names no key the gateway can place.
		{"old limiter nesting", nodes + "classes:\n  ai:\n    limiter: {limit: 8}\n", 5, "", "limiter"},
		{"limiter knob out of range", nodes + "classes:\n  ai:\n    algorithm: aimd\n    backoff: 2\n", 4, "classes.ai", "backoff"},
		{"pool knob", nodes + "  health_timeout: -1s\n", 3, "upstream.health_timeout", "> 0"},
		{"retry budget ttl", nodes + "  retry_budget: {ttl: 0s}\n", 3, "upstream.retry_budget.ttl", "> 0"},
		{"idle conn timeout 0", nodes + "  idle_conn_timeout: 0s\n", 3, "upstream.idle_conn_timeout", "(0, 1h0m0s]"},
		{"idle conn timeout negative", nodes + "  idle_conn_timeout: -4s\n", 3, "upstream.idle_conn_timeout", "(0, 1h0m0s]"},
		{"hedge quantile", nodes + "  hedge: {quantile: 2}\n", 3, "upstream.hedge.quantile", "outside (0,1)"},
		{"retry_on", nodes + "  retry_on: [connect, sometimes]\n", 3, "upstream.retry_on[1]", "sometimes"},
		{"ejection cap", nodes + "  outlier:\n    max_ejection_percent: 150\n", 4, "upstream.outlier.max_ejection_percent", "outside"},
		{"zero is no silent default", nodes + "  hedge: {ratio: 0}\n", 3, "upstream.hedge.ratio", "must not be 0"},
		{"empty retry_on is no silent default", nodes + "  retry_on: []\n", 3, "upstream.retry_on", "must not be 0 or empty"},
		{"retry ratio 0", nodes + "  retry_budget: {ratio: 0}\n", 3, "upstream.retry_budget.ratio", "(0, 1]"},
		// Once wrapped to a negative reserve: no retry at all.
		{"retry reserve beyond its count", nodes + "  retry_budget: {min_per_second: 1e15}\n", 3, "upstream.retry_budget.min_per_second", "reserve of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if ce.Line != tc.line {
				t.Errorf("line: got %d, want %d (%v)", ce.Line, tc.line, err)
			}
			if ce.Field != tc.field {
				t.Errorf("field: got %q, want %q", ce.Field, tc.field)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestRuleWindowMsAlias(t *testing.T) {
	// The admin API's rule shape (window_ms, cost omitted) reads as config.
	cfg, err := ParseConfig([]byte("upstream: {nodes: [127.0.0.1:9]}\nratelimit:\n  rules:\n    - {tenant: '*', route: chat, algorithm: sliding_window, limit: 3, window_ms: 1500}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.RateLimit.Rules[0].window(); w != 1500*time.Millisecond {
		t.Errorf("window_ms 1500 read as %v", w)
	}
	if _, err := ParseConfig([]byte("upstream: {nodes: [127.0.0.1:9]}\nratelimit:\n  rules:\n    - {tenant: '*', route: chat, algorithm: sliding_window, limit: 3, window_ms: 1500, cost: dollars}\n")); err == nil {
		t.Errorf("cost: dollars accepted")
	}
}

func TestLoadConfigNamesFile(t *testing.T) {
	_, err := LoadConfig("testdata/nope.yaml")
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("got %v", err)
	}
}

func FuzzConfig(f *testing.F) {
	f.Add([]byte("upstream:\n  nodes: [\"127.0.0.1:9\"]\n"))
	f.Add([]byte("classes: {ai: {limit: -1}}"))
	f.Add([]byte("keys: [{key: a}]\nratelimit: {rules: [{tenant: '*'}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
	})
}

// TestConfigEmbedsPartsKnobs: the knobs the parts' own config types add
// are settable from the gateway's YAML and reach the parts.
func TestConfigEmbedsPartsKnobs(t *testing.T) {
	cfg, err := ParseConfig([]byte("upstream:\n  nodes: [127.0.0.1:9]\n  health_timeout: 750ms\n  unhealthy_threshold: 5\n" +
		"classes:\n  ai: {algorithm: gradient, limit: 32, min: 4, max: 128, trim: 0.4, timeout_ms: 9000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.Upstream; u.HealthTimeout != 750*time.Millisecond || u.UnhealthyThreshold != 5 {
		t.Errorf("upstream: %+v", u)
	}
	if l := cfg.Classes.AI.Limiter; l.Algorithm != admit.AlgoGradient || l.Trim != 0.4 || l.TimeoutMs != 9000 || l.Limit != 32 {
		t.Errorf("ai limiter: %+v", l)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if st := g.State().Limits.Classes[wire.ClassAI]; st.Algorithm != admit.AlgoGradient || st.ConfiguredLmt != 32 {
		t.Errorf("ai class state: %+v", st)
	}
}
