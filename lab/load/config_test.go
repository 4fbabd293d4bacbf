package load

import (
	"math"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{
		Targets: []string{"http://127.0.0.1:1"},
		Mix: Mix{
			Priorities:   map[string]float64{"P0": 1, "P1": 2, "P2": 7},
			Keys:         map[string]string{"P0": "k0", "P1": "k1", "P2": ""},
			Routes:       map[string]float64{"chat": 1, "predict": 1},
			PromptTokens: [2]int{10, 100},
			MaxTokens:    64,
		},
		Arrival:        ArrivalConstant,
		ClientTimeout:  time.Second,
		MaxOutstanding: 10,
	}
}

func TestConfigValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string // substring of the error
	}{
		{"no targets", func(c *Config) { c.Targets = nil }, "targets"},
		{"bad target", func(c *Config) { c.Targets = []string{"127.0.0.1:80"} }, "targets[0]"},
		{"ftp target", func(c *Config) { c.Targets = []string{"ftp://x"} }, "targets[0]"},
		{"no host, a colon", func(c *Config) { c.Targets = []string{"http://:"} }, "not an http(s) base URL"},
		{"no host, a port", func(c *Config) { c.Targets = []string{"http://:8080"} }, "not an http(s) base URL"},
		{"a bracket for a host", func(c *Config) { c.Targets = []string{"http://]"} }, "not an http(s) base URL"},
		{"port out of range", func(c *Config) { c.Targets = []string{"http://127.0.0.1:99999"} }, "port must be in [1, 65535]"},
		{"port 0", func(c *Config) { c.Targets = []string{"http://127.0.0.1:0"} }, "port must be in [1, 65535]"},
		{"query target", func(c *Config) { c.Targets = []string{"http://127.0.0.1:1/?tenant=a"} }, "query or fragment"},
		{"empty query target", func(c *Config) { c.Targets = []string{"http://127.0.0.1:1?"} }, "query or fragment"},
		{"fragment target", func(c *Config) { c.Targets = []string{"http://127.0.0.1:1/gw#x"} }, "query or fragment"},
		{"empty fragment target", func(c *Config) { c.Targets = []string{"http://127.0.0.1:1#"} }, "query or fragment"},
		{"second target query", func(c *Config) { c.Targets = []string{"http://127.0.0.1:1", "http://127.0.0.1:2/gw?x=1"} }, "targets[1]"},
		{"arrival empty", func(c *Config) { c.Arrival = "" }, "arrival"},
		{"arrival unknown", func(c *Config) { c.Arrival = "burst" }, "arrival"},
		{"timeout zero", func(c *Config) { c.ClientTimeout = 0 }, "client_timeout"},
		{"outstanding zero", func(c *Config) { c.MaxOutstanding = 0 }, "max_outstanding"},
		{"no priorities", func(c *Config) { c.Mix.Priorities = nil }, "mix.priorities"},
		{"unknown priority", func(c *Config) { c.Mix.Priorities["P3"] = 1 }, "P3"},
		{"negative share", func(c *Config) { c.Mix.Priorities["P0"] = -1 }, "mix.priorities"},
		{"NaN share", func(c *Config) { c.Mix.Routes["chat"] = math.NaN() }, "mix.routes"},
		{"zero shares", func(c *Config) { c.Mix.Routes = map[string]float64{"chat": 0} }, "sum to 0"},
		{"missing key", func(c *Config) { delete(c.Mix.Keys, "P1") }, "mix.keys"},
		{"key for unknown priority", func(c *Config) { c.Mix.Keys["P9"] = "x" }, "P9"},
		{"unknown route", func(c *Config) { c.Mix.Routes["fax"] = 1 }, "fax"},
		{"prompt min > max", func(c *Config) { c.Mix.PromptTokens = [2]int{5, 1} }, "prompt_tokens"},
		{"prompt negative", func(c *Config) { c.Mix.PromptTokens = [2]int{-1, 1} }, "prompt_tokens"},
		{"max_tokens 0 with chat", func(c *Config) { c.Mix.MaxTokens = 0 }, "max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			c.Mix.Priorities = clone(c.Mix.Priorities)
			c.Mix.Routes = clone(c.Mix.Routes)
			c.Mix.Keys = clone(c.Mix.Keys)
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error mentioning %q", err, tc.want)
			}
			if _, nerr := New(c); nerr == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
	// max_tokens 0 is fine without chat-like routes.
	c := validConfig()
	c.Mix.Routes = map[string]float64{"standard": 1, "export": 1}
	c.Mix.MaxTokens = 0
	if err := c.Validate(); err != nil {
		t.Errorf("max_tokens 0 without chat: %v", err)
	}
}

func clone[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestSetters(t *testing.T) {
	g, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), MaxRate * 2} {
		if err := g.SetRate(bad); err == nil {
			t.Errorf("SetRate(%v) accepted", bad)
		}
	}
	if err := g.SetRate(250); err != nil || g.Rate() != 250 {
		t.Errorf("SetRate(250): %v, Rate = %v", err, g.Rate())
	}
	if err := g.SetRate(-5); err == nil || g.Rate() != 250 {
		t.Errorf("a refused SetRate changed the rate to %v", g.Rate())
	}
	if err := g.SetSlowClients(1.5, 1); err == nil {
		t.Error("share 1.5 accepted")
	}
	if err := g.SetSlowClients(0.5, 0); err == nil {
		t.Error("kbps 0 with a share accepted")
	}
	if err := g.SetSlowClients(0, 0); err != nil {
		t.Errorf("turning slow clients off: %v", err)
	}
	if err := g.SetTargets(nil); err == nil {
		t.Error("empty targets accepted")
	}
	if err := g.SetTargets([]string{"http://127.0.0.1:2/?tenant=a"}); err == nil {
		t.Error("a target with a query accepted")
	}
	if err := g.SetTargets([]string{"http://127.0.0.1:2/", "http://127.0.0.1:3"}); err != nil {
		t.Fatal(err)
	}
	if got := g.Targets(); len(got) != 2 || got[0] != "http://127.0.0.1:2" {
		t.Errorf("Targets = %v", got)
	}
}
