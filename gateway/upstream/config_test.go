package upstream

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Nodes: []string{"http://127.0.0.1:9001", "http://127.0.0.1:9002/"}}
	tests := []struct {
		name  string
		mod   func(*Config)
		field string // "" = valid
	}{
		{"minimal", func(*Config) {}, ""},
		{"all set", func(c *Config) {
			c.HealthPath, c.HealthInterval, c.MinServiceTime = "/readyz", time.Second, 50*time.Millisecond
			c.MaxIdleConnsPerHost, c.DialTimeout = 64, 200*time.Millisecond
			c.Breaker = BreakerConfig{FailureRatio: 1, MinRequests: 1, Window: time.Second, OpenFor: time.Second, HalfOpenProbes: 1}
			c.RetryBudget = RetryBudgetConfig{Ratio: 0.2, MinPerSecond: 3, TTL: time.Second}
		}, ""},
		{"no nodes", func(c *Config) { c.Nodes = nil }, "nodes"},
		{"bad scheme", func(c *Config) { c.Nodes = []string{"http://a:1", "ftp://b:2"} }, "nodes[1]"},
		{"no host", func(c *Config) { c.Nodes = []string{"http://"} }, "nodes[0]"},
		{"unparsable", func(c *Config) { c.Nodes = []string{"http://a b:%zz"} }, "nodes[0]"},
		{"query", func(c *Config) { c.Nodes = []string{"http://a:1/?x=1"} }, "nodes[0]"},
		{"credentials", func(c *Config) { c.Nodes = []string{"https://u:secret@a:1"} }, "nodes[0]"},
		{"duplicate", func(c *Config) { c.Nodes = []string{"http://a:1", "http://a:1/"} }, "nodes[1]"},
		{"health path", func(c *Config) { c.HealthPath = "healthz" }, "health_path"},
		{"health interval", func(c *Config) { c.HealthInterval = -1 }, "health_interval"},
		{"min service", func(c *Config) { c.MinServiceTime = -1 }, "min_service_time"},
		{"idle conns", func(c *Config) { c.MaxIdleConnsPerHost = -1 }, "max_idle_conns_per_host"},
		{"dial timeout", func(c *Config) { c.DialTimeout = -time.Second }, "dial_timeout"},
		{"idle conn timeout", func(c *Config) { c.IdleConnTimeout = -time.Second }, "idle_conn_timeout"},
		{"failure ratio high", func(c *Config) { c.Breaker.FailureRatio = 1.5 }, "breaker.failure_ratio"},
		{"failure ratio NaN", func(c *Config) { c.Breaker.FailureRatio = math.NaN() }, "breaker.failure_ratio"},
		{"min requests", func(c *Config) { c.Breaker.MinRequests = -3 }, "breaker.min_requests"},
		{"window", func(c *Config) { c.Breaker.Window = -1 }, "breaker.window"},
		{"open for", func(c *Config) { c.Breaker.OpenFor = -1 }, "breaker.open_for"},
		{"probes", func(c *Config) { c.Breaker.HalfOpenProbes = -1 }, "breaker.half_open_probes"},
		{"retry ratio", func(c *Config) { c.RetryBudget.Ratio = -0.1 }, "retry_budget.ratio"},
		{"retry min", func(c *Config) { c.RetryBudget.MinPerSecond = -1 }, "retry_budget.min_per_second"},
		{"retry ttl", func(c *Config) { c.RetryBudget.TTL = -1 }, "retry_budget.ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			c.Nodes = append([]string(nil), ok.Nodes...)
			tt.mod(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want *FieldError for %s", err, tt.field)
			}
			if fe.Field != tt.field || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("field = %q (%v), want %q", fe.Field, err, tt.field)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("the error shows the password: %v", err)
			}
			if _, err := New(c); err == nil {
				t.Fatalf("New accepted a config Validate rejects")
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{Nodes: []string{"http://a:1"}, MaxIdleConnsPerHost: 7}.WithDefaults()
	if c.HealthPath != "/healthz" || c.HealthInterval != 500*time.Millisecond || c.DialTimeout != time.Second {
		t.Errorf("health/dial defaults: %+v", c)
	}
	if c.MaxIdleConnsPerHost != 7 {
		t.Errorf("explicit MaxIdleConnsPerHost overwritten: %d", c.MaxIdleConnsPerHost)
	}
	if c.RetryBudget.Ratio != 0.1 || c.RetryBudget.MinPerSecond != 0 || c.RetryBudget.TTL != 10*time.Second {
		t.Errorf("retry defaults: %+v", c.RetryBudget)
	}
	want := BreakerConfig{FailureRatio: 0.5, MinRequests: 20, Window: 10 * time.Second, OpenFor: 5 * time.Second, HalfOpenProbes: 3}
	if c.Breaker != want {
		t.Errorf("breaker defaults: %+v, want %+v", c.Breaker, want)
	}
	if d := (Config{}).WithDefaults(); d.MaxIdleConnsPerHost != 512 {
		t.Errorf("MaxIdleConnsPerHost default %d", d.MaxIdleConnsPerHost)
	}
}

// ValidateExplicit accepts a config WithDefaults filled and names the
// first field left zero where a default would silently apply.
func TestConfigValidateExplicit(t *testing.T) {
	full := Config{Nodes: []string{"http://a:1"}}.WithDefaults()
	if err := full.ValidateExplicit(); err != nil {
		t.Fatalf("a config WithDefaults filled: %v", err)
	}
	full.Hedge.MinPerSecond, full.RetryBudget.MinPerSecond = 0, 0 // zero is a value here, not "default"
	full.Hedge.Disabled, full.Outlier.Disabled = true, true
	if err := full.ValidateExplicit(); err != nil {
		t.Fatalf("zero reserves and disabled switches: %v", err)
	}
	for _, tt := range []struct {
		field string
		mod   func(*Config)
		hint  bool // the message says how to turn the mechanism off
	}{
		{"health_interval", func(c *Config) { c.HealthInterval = 0 }, false},
		{"retry_budget.ratio", func(c *Config) { c.RetryBudget.Ratio = 0 }, false},
		{"retry_budget.p0_reserve", func(c *Config) { c.RetryBudget.P0Reserve = 0 }, false},
		{"retry_on", func(c *Config) { c.RetryOn = []string{} }, false},
		{"attempt_timeout.multiplier", func(c *Config) { c.AttemptTimeout.Multiplier = 0 }, true},
		{"hedge.ratio", func(c *Config) { c.Hedge.Ratio = 0 }, true},
		{"outlier.max_ejection_percent", func(c *Config) { c.Outlier.MaxEjectionPercent = 0 }, true},
	} {
		t.Run(tt.field, func(t *testing.T) {
			c := Config{Nodes: []string{"http://a:1"}}.WithDefaults()
			tt.mod(&c)
			var fe *FieldError
			if err := c.ValidateExplicit(); !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("ValidateExplicit = %v, want a *FieldError for %s", err, tt.field)
			}
			if got := strings.Contains(fe.Msg, "disabled: true"); got != tt.hint {
				t.Errorf("message %q: mentions disabled %v, want %v", fe.Msg, got, tt.hint)
			}
		})
	}
}
