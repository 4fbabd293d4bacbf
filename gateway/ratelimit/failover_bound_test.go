package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// flapRun plays n gateways (Failovers with share 1/n) over one shared
// store in virtual time: every gateway is offered one request per
// millisecond for 20 s (n × 1000/s, far above the limit), while the shared
// store is down for down out of every period (a flapping breaker). It
// returns the most any span of the rule admitted over all gateways, the
// least any span admitted once the run was under way, and the decisions
// counted (remote + fallbacks) against the decisions made.
func flapRun(t *testing.T, rule Rule, n int, period, down time.Duration, bounded bool) (most, least int, counted, made uint64) {
	t.Helper()
	start := time.Unix(1_700_000_000, 0)
	clk := &fakeClock{t: start}
	shared := NewLocal()
	primary := StoreFunc(func(ctx context.Context, key string, r Rule, cost int64, now time.Time) (Decision, error) {
		if period > 0 && now.Sub(start)%period < down {
			return Decision{}, errors.New("connection refused")
		}
		return shared.Allow(ctx, key, r, cost, now)
	})
	fos := make([]*Failover, n)
	for i := range fos {
		local := NewLocal()
		var ls Store = local
		if !bounded {
			ls = StoreFunc(local.Allow) // hides Record: the share as it was
		}
		// An hour's timeout: only the schedule fails the shared store, never
		// a stall of this process (-race, a loaded machine).
		f, err := NewFailover(primary, failoverClock(clk.Now), FailoverShare(1/float64(n)), FailoverLocal(ls),
			FailoverBreaker(3, 100*time.Millisecond), FailoverBreakerSpan(0), FailoverTimeout(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		fos[i] = f
	}
	const runFor = 20 * time.Second
	perMs := make([]int, runFor/time.Millisecond)
	for ms := range perMs {
		now := start.Add(time.Duration(ms) * time.Millisecond)
		clk.mu.Lock()
		clk.t = now
		clk.mu.Unlock()
		for _, f := range fos {
			d, err := f.Allow(context.Background(), "tenant-p2:*", rule, 1, now)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				perMs[ms]++
			}
			made++
		}
	}
	for _, f := range fos {
		counted += f.Fallbacks() + f.RemoteDecisions()
	}
	span := int(ruleSpan(rule) / time.Millisecond)
	sum := 0
	least = -1
	for ms, a := range perMs {
		sum += a
		if ms >= span {
			sum -= perMs[ms-span]
		}
		if ms+1 >= span {
			most = max(most, sum)
			if ms+1 >= 2*span && (least < 0 || sum < least) {
				least = sum
			}
		}
	}
	return most, least, counted, made
}

// A flapping breaker does not let the fail-open shares add to the shared
// limit: with the local share counting what the shared store admitted (and
// gating admissions for a span after a local decision), every span of the
// rule admits at most the limit over all gateways, where the unbounded
// share let up to ~2× through. Checked for both algorithms, 3 and 5
// gateways, and a few flapping rhythms; deterministic (virtual time).
func TestFailoverFlappingShareIsBounded(t *testing.T) {
	rules := map[string]Rule{
		"sliding": {Algorithm: SlidingWindow, Limit: 300, Window: time.Second},
		"bucket":  {Algorithm: TokenBucket, ReplenishRate: 300, Burst: 300},
	}
	for name, rule := range rules {
		for _, n := range []int{3, 5} {
			for _, fl := range []struct{ period, down time.Duration }{
				{600 * time.Millisecond, 200 * time.Millisecond},
				{1500 * time.Millisecond, 700 * time.Millisecond},
				{400 * time.Millisecond, 20 * time.Millisecond},
			} {
				t.Run(fmt.Sprintf("%s/%d gateways/down %v of %v", name, n, fl.down, fl.period), func(t *testing.T) {
					// The most one span of the rule may admit: a sliding
					// window's limit; a token bucket's burst plus its refill
					// over the span.
					limit := float64(rule.Capacity())
					if rule.Algorithm == TokenBucket {
						limit += rule.ReplenishRate * ruleSpan(rule).Seconds()
					}
					most, _, counted, made := flapRun(t, rule, n, fl.period, fl.down, true)
					if counted != made {
						t.Errorf("remote + fallbacks = %d, decisions %d", counted, made)
					}
					was, _, _, _ := flapRun(t, rule, n, fl.period, fl.down, false)
					t.Logf("most admitted in one span: %d bounded, %d unbounded (limit %.0f)", most, was, limit)
					// The share rounds up per gateway (Scaled): n−1 extra at most.
					if float64(most) > limit*1.05+float64(n) {
						t.Errorf("bounded: %d admitted in one span, want ≤ limit %.0f (+5 %%)", most, limit)
					}
					if float64(was) < limit*1.3 {
						t.Errorf("unbounded share admitted only %d in one span: this rhythm does not show the leak", was)
					}
				})
			}
		}
	}
}

// Recording the shared store's admissions costs no throughput while the
// store is healthy: every span admits the limit, no fallback.
func TestFailoverRecordKeepsTheLimitWhenHealthy(t *testing.T) {
	rule := Rule{Algorithm: SlidingWindow, Limit: 300, Window: time.Second}
	most, least, counted, made := flapRun(t, rule, 3, 0, 0, true)
	if most != 300 || least < 300*95/100 || counted != made {
		t.Errorf("healthy store: spans admitted %d..%d, want 300; counted %d of %d", least, most, counted, made)
	}
}
