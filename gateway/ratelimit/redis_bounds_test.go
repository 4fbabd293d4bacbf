package ratelimit

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRuleBoundsHoldOnRedis: the edges of a Rule's bounds (MaxUnits,
// MinWindow, MaxWindow, MaxRefill) decide on the embedded server and on
// redis-server as they should — a whole bucket taken, then refused with a
// Retry-After, a window's limit counted — and rules beyond them are
// refused by Validate (rate 2^63, burst 1e17, a window under 1 µs) or by
// the Redis store before any script runs (a bucket taking over a year to
// refill, whose expiry Redis refuses: "value is not an integer or out of
// range").
func TestRuleBoundsHoldOnRedis(t *testing.T) {
	for _, r := range []Rule{
		{Algorithm: TokenBucket, ReplenishRate: 1 << 63, Burst: 1},
		{Algorithm: TokenBucket, ReplenishRate: 1, Burst: 1e17},
		{Algorithm: SlidingWindow, Limit: 1e17, Window: time.Second},
		{Algorithm: SlidingWindow, Limit: 1, Window: 500 * time.Nanosecond},
		{Algorithm: SlidingWindow, Limit: 1, Window: MaxWindow + time.Second},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", r)
		}
	}
	slowest := float64(MaxUnits) / MaxRefill.Seconds()
	for _, b := range []backend{embeddedBackend, serverBackend} {
		t.Run(b.name, func(t *testing.T) {
			c, err := OpenRedis(b.start(t))
			if err != nil {
				t.Fatal(err)
			}
			s := NewRedis(c)
			ctx := context.Background()
			tooSlow := Rule{Algorithm: TokenBucket, ReplenishRate: slowest / 2, Burst: MaxUnits}
			if _, err := s.Allow(ctx, "too-slow", tooSlow, 1, time.Now()); err == nil || !strings.Contains(err.Error(), "replenish_rate") {
				t.Errorf("Allow with a refill of two years: %v, want an error naming replenish_rate", err)
			}
			if err := s.Settle(ctx, "too-slow", tooSlow, 1, time.Now()); err == nil || !strings.Contains(err.Error(), "replenish_rate") {
				t.Errorf("Settle with a refill of two years: %v, want an error naming replenish_rate", err)
			}
			for i, r := range []Rule{
				{Algorithm: TokenBucket, ReplenishRate: MaxUnits, Burst: MaxUnits},
				{Algorithm: TokenBucket, ReplenishRate: slowest, Burst: MaxUnits},
				{Algorithm: TokenBucket, ReplenishRate: 2 / MaxRefill.Seconds(), Burst: 2},
			} {
				key := "tb" + string(rune('a'+i))
				d, err := s.Allow(ctx, key, r, r.Burst, time.Now())
				if err != nil || !d.Allowed {
					t.Fatalf("rule %+v, the whole burst: %+v, %v; want allowed", r, d, err)
				}
				if r.ReplenishRate >= MaxUnits {
					continue // full again within a µs
				}
				d, err = s.Allow(ctx, key, r, r.Burst, time.Now())
				if err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > MaxRefill {
					t.Errorf("rule %+v, the whole burst again: %+v, %v; want refused with a Retry-After in (0, %v]", r, d, err, MaxRefill)
				}
				if err := s.Settle(ctx, key, r, r.Burst, time.Now()); err != nil {
					t.Errorf("rule %+v: settling a burst's overuse: %v", r, err)
				}
			}
			for i, r := range []Rule{
				{Algorithm: SlidingWindow, Limit: MaxUnits, Window: MaxWindow},
				{Algorithm: SlidingWindow, Limit: 1, Window: MaxWindow},
			} {
				key := "sw" + string(rune('a'+i))
				if d, err := s.Allow(ctx, key, r, r.Limit, time.Now()); err != nil || !d.Allowed {
					t.Fatalf("rule %+v, the whole limit: %+v, %v; want allowed", r, d, err)
				}
				if d, err := s.Allow(ctx, key, r, 1, time.Now()); err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > MaxWindow {
					t.Errorf("rule %+v, one more: %+v, %v; want refused with a Retry-After in (0, %v]", r, d, err, MaxWindow)
				}
			}
		})
	}
}
