// Package ratelimit decides whether one request of a given cost may pass a
// rate limit rule now: sliding window (an exact log of admitted requests) and
// token bucket (replenish rate + burst). Decisions come from a Store; this
// package ships the in-process Local store, and Open builds a store from
// configuration.
package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Algorithm names a rate limit algorithm.
type Algorithm string

// The algorithms a Rule may name.
const (
	// SlidingWindow admits a request when the cost admitted during the last
	// Window, plus this request's cost, is at most Limit.
	SlidingWindow Algorithm = "sliding_window"
	// TokenBucket admits a request when the bucket holds at least its cost in
	// tokens; the bucket refills at ReplenishRate tokens per second up to Burst.
	TokenBucket Algorithm = "token_bucket"
)

// ErrCostExceedsCapacity is returned (wrapped) by Store.Allow when the cost of
// one request is larger than the rule can ever admit (Limit for a sliding
// window, Burst for a token bucket). Such a request can never pass: callers
// should answer it as a rate-limited or bad request, not as a store failure.
var ErrCostExceedsCapacity = errors.New("ratelimit: cost exceeds the rule's capacity")

// Bounds of a Rule (Validate). Each is far beyond real use and inside what
// the stores compute exactly: the Redis scripts hold counts in doubles
// (exact to 2^53: a larger burst or limit stops counting one request),
// read the clock in whole microseconds (a shorter window would be 0, no
// limit at all) and pass expiries in milliseconds as integers (Redis
// refuses a Lua number of 10^14 or more there, which it prints with an
// exponent).
const (
	// MaxUnits bounds Limit, Burst and ReplenishRate (per second): 2^50,
	// about 1.1e15.
	MaxUnits = 1 << 50
	// MinWindow and MaxWindow bound a sliding window's Window.
	MinWindow = time.Millisecond
	MaxWindow = 24 * time.Hour
	// MaxRefill bounds the time a token bucket takes to fill from empty,
	// Burst / ReplenishRate: a year (a monthly quota takes 30 days).
	MaxRefill = 365 * 24 * time.Hour
)

// Rule is one rate limit. The zero value is invalid; call Validate.
type Rule struct {
	Algorithm Algorithm `yaml:"algorithm" json:"algorithm"`
	// Limit is, for a sliding window, the most requests (or cost units)
	// admitted during any Window. Unused by a token bucket.
	Limit int64 `yaml:"limit" json:"limit"`
	// Window is the sliding window's length. Unused by a token bucket.
	Window time.Duration `yaml:"window" json:"window"`
	// ReplenishRate is the token bucket's refill rate in tokens per second.
	ReplenishRate float64 `yaml:"replenish_rate" json:"replenish_rate"`
	// Burst is the token bucket's capacity; a new bucket starts full.
	Burst int64 `yaml:"burst" json:"burst"`
}

// Validate reports the first invalid field of r, naming it: a sliding
// window's Limit in [1, MaxUnits] and Window in [MinWindow, MaxWindow]; a
// token bucket's ReplenishRate in (0, MaxUnits] tokens/s and Burst in
// [1, MaxUnits]. A share of a valid rule (Scaled, ShareFor) is valid. The
// Redis store also wants a token bucket to refill within MaxRefill
// (CheckRefill).
func (r Rule) Validate() error {
	switch r.Algorithm {
	case SlidingWindow:
		if r.Limit < 1 || r.Limit > MaxUnits {
			return fmt.Errorf("ratelimit: rule field limit: %d, want [1, %d] for %s", r.Limit, int64(MaxUnits), r.Algorithm)
		}
		if r.Window < MinWindow || r.Window > MaxWindow {
			return fmt.Errorf("ratelimit: rule field window: %v, want [%v, %v] for %s", r.Window, MinWindow, MaxWindow, r.Algorithm)
		}
	case TokenBucket:
		if !(r.ReplenishRate > 0) || math.IsInf(r.ReplenishRate, 0) || r.ReplenishRate > MaxUnits {
			return fmt.Errorf("ratelimit: rule field replenish_rate: %v, want a rate in (0, %d] tokens/s for %s", r.ReplenishRate, int64(MaxUnits), r.Algorithm)
		}
		if r.Burst < 1 || r.Burst > MaxUnits {
			return fmt.Errorf("ratelimit: rule field burst: %d, want [1, %d] for %s", r.Burst, int64(MaxUnits), r.Algorithm)
		}
	case "":
		return fmt.Errorf("ratelimit: rule field algorithm: missing, want %q or %q", SlidingWindow, TokenBucket)
	default:
		return fmt.Errorf("ratelimit: rule field algorithm: %q, want %q or %q", r.Algorithm, SlidingWindow, TokenBucket)
	}
	return nil
}

// CheckRefill reports a token bucket that takes longer than MaxRefill to
// fill from empty (Burst / ReplenishRate), naming replenish_rate; any
// other rule passes. The Redis scripts set the bucket's expiry to its
// refill time in milliseconds, which Redis refuses from 10^14 on.
func (r Rule) CheckRefill() error {
	if r.Algorithm != TokenBucket || !(r.ReplenishRate > 0) {
		return nil
	}
	if secs := float64(r.Burst) / r.ReplenishRate; !(secs <= MaxRefill.Seconds()) {
		return fmt.Errorf("ratelimit: rule field replenish_rate: %v tokens/s fills a burst of %d in %.3g s, want at most %v (%g s): burst / replenish_rate ≤ %g",
			r.ReplenishRate, r.Burst, secs, MaxRefill, MaxRefill.Seconds(), MaxRefill.Seconds())
	}
	return nil
}

// Capacity is the largest cost one request may have under r: Limit for a
// sliding window, Burst for a token bucket.
func (r Rule) Capacity() int64 {
	if r.Algorithm == TokenBucket {
		return r.Burst
	}
	return r.Limit
}

// Scaled returns this instance's share of a global rule, as used when a
// shared (Redis) store is unreachable and each of N gateways falls back to
// deciding alone with share 1/N. Limit and Burst are rounded up and stay ≥ 1
// (a request of cost 1 is never impossible locally; ShareFor extends that
// to any cost); ReplenishRate is scaled exactly; Window is unchanged. A
// share outside (0, 1] (or NaN) returns r unchanged.
func (r Rule) Scaled(share float64) Rule {
	if !(share > 0 && share <= 1) {
		return r
	}
	scale := func(n int64) int64 {
		if n <= 0 {
			return n
		}
		s := int64(math.Ceil(float64(n) * share))
		if s < 1 {
			s = 1
		}
		return s
	}
	r.Limit = scale(r.Limit)
	r.Burst = scale(r.Burst)
	r.ReplenishRate *= share
	return r
}

// ShareFor is r.Scaled(share) for a request of cost: where the share's
// capacity (Limit or Burst) is below cost, it is raised to cost, so that a
// request the global rule admits (cost ≤ r.Capacity()) is never
// impossible locally — it needs the whole share, and waits for it. Such a
// share admits at most one such request per span more than share × the
// rule.
func (r Rule) ShareFor(share float64, cost int64) Rule {
	s := r.Scaled(share)
	if s.Algorithm == TokenBucket {
		s.Burst = max(s.Burst, min(cost, r.Burst))
	} else {
		s.Limit = max(s.Limit, min(cost, r.Limit))
	}
	return s
}

// Decision is the answer to one Allow call.
type Decision struct {
	// Allowed reports whether the request passes; its cost has been taken.
	Allowed bool
	// Remaining is the cost that could still pass now (after this request).
	Remaining int64
	// Limit is the rule's capacity (Limit or Burst).
	Limit int64
	// RetryAfter is > 0 exactly when Allowed is false: the earliest wait
	// after which a retry of the same cost passes, given no other traffic.
	RetryAfter time.Duration
	// Unavailable reports a denial made because the shared store could not
	// be asked and the store fails closed (see Failover): it says nothing of
	// the key's use, and RetryAfter is the time until the store is tried
	// again. Always false when Allowed.
	Unavailable bool
}

// RetryAfterSeconds is the value of an HTTP Retry-After header for d: whole
// seconds rounded up, and at least 1 for any d > 0 (0 for d ≤ 0).
func RetryAfterSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}
