package ratelimit

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestRuleValidate(t *testing.T) {
	tests := []struct {
		name  string
		rule  Rule
		field string // "" means valid
	}{
		{"sliding ok", Rule{Algorithm: SlidingWindow, Limit: 10, Window: time.Second}, ""},
		{"bucket ok", Rule{Algorithm: TokenBucket, ReplenishRate: 0.5, Burst: 3}, ""},
		{"missing algorithm", Rule{Limit: 10, Window: time.Second}, "algorithm"},
		{"unknown algorithm", Rule{Algorithm: "leaky", Limit: 10, Window: time.Second}, "algorithm"},
		{"sliding zero limit", Rule{Algorithm: SlidingWindow, Window: time.Second}, "limit"},
		{"sliding negative limit", Rule{Algorithm: SlidingWindow, Limit: -1, Window: time.Second}, "limit"},
		{"sliding zero window", Rule{Algorithm: SlidingWindow, Limit: 1}, "window"},
		{"bucket zero rate", Rule{Algorithm: TokenBucket, Burst: 1}, "replenish_rate"},
		{"bucket NaN rate", Rule{Algorithm: TokenBucket, ReplenishRate: math.NaN(), Burst: 1}, "replenish_rate"},
		{"bucket Inf rate", Rule{Algorithm: TokenBucket, ReplenishRate: math.Inf(1), Burst: 1}, "replenish_rate"},
		{"bucket zero burst", Rule{Algorithm: TokenBucket, ReplenishRate: 1}, "burst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rule.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "field "+tt.field) {
				t.Fatalf("Validate() = %v, want an error naming field %q", err, tt.field)
			}
		})
	}
}

func TestRuleScaled(t *testing.T) {
	sw := Rule{Algorithm: SlidingWindow, Limit: 100, Window: time.Second}
	tb := Rule{Algorithm: TokenBucket, ReplenishRate: 30, Burst: 10}
	tests := []struct {
		name  string
		in    Rule
		share float64
		want  Rule
	}{
		{"third of sliding", sw, 1.0 / 3, Rule{Algorithm: SlidingWindow, Limit: 34, Window: time.Second}},
		{"third of bucket", tb, 1.0 / 3, Rule{Algorithm: TokenBucket, ReplenishRate: 10, Burst: 4}},
		{"whole", sw, 1, sw},
		{"tiny share keeps 1", sw, 0.0001, Rule{Algorithm: SlidingWindow, Limit: 1, Window: time.Second}},
		{"zero share unchanged", sw, 0, sw},
		{"negative share unchanged", sw, -0.5, sw},
		{"share above 1 unchanged", sw, 2, sw},
		{"NaN share unchanged", sw, math.NaN(), sw},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.Scaled(tt.share)
			if math.Abs(got.ReplenishRate-tt.want.ReplenishRate) > 1e-9 {
				t.Fatalf("Scaled(%v).ReplenishRate = %v, want %v", tt.share, got.ReplenishRate, tt.want.ReplenishRate)
			}
			got.ReplenishRate = tt.want.ReplenishRate
			if got != tt.want {
				t.Fatalf("Scaled(%v) = %+v, want %+v", tt.share, got, tt.want)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{-time.Second, 0},
		{0, 0},
		{1, 1},
		{time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + 1, 2},
		{2500 * time.Millisecond, 3},
		{time.Minute, 60},
	}
	for _, tt := range tests {
		if got := RetryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

func TestStoreConfigValidateAndOpen(t *testing.T) {
	f := false
	tests := []struct {
		name    string
		cfg     StoreConfig
		wantErr string // substring; "" means Open succeeds
	}{
		{"empty kind is local", StoreConfig{}, ""},
		{"local", StoreConfig{Kind: "local", Share: 0.5}, ""},
		{"unknown kind", StoreConfig{Kind: "memcached"}, "field kind"},
		{"redis without url", StoreConfig{Kind: "redis"}, "field url"},
		{"negative timeout", StoreConfig{TimeoutMs: -1}, "field timeout_ms"},
		{"share above 1", StoreConfig{Share: 1.5}, "field share"},
		{"negative share", StoreConfig{Share: -0.1}, "field share"},
		{"NaN share", StoreConfig{Share: math.NaN()}, "field share"},
		{"local ignores fail_open", StoreConfig{Kind: "local", FailOpen: &f}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c, err := Open(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Open(%+v) = %v", tt.cfg, err)
				}
				if s == nil || c == nil {
					t.Fatalf("Open(%+v) returned a nil store or closer", tt.cfg)
				}
				if err := c.Close(); err != nil {
					t.Fatalf("Close() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Open(%+v) = %v, want an error containing %q", tt.cfg, err, tt.wantErr)
			}
		})
	}
}
