package ratelimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
	"github.com/levee-lab/levee/internal/redistest"
)

// TestSettle: on a token bucket (one token back per 10 s: refill plays no
// part), a refund returns tokens up to the burst, an overuse puts the
// bucket in debt that delays the next request, and a sliding window keeps
// its estimate. The local store and Redis agree.
func TestSettle(t *testing.T) {
	redisStore, _ := newRedisStore(t)
	for _, tc := range []struct {
		name  string
		store interface {
			Store
			Settler
		}
	}{{"local", NewLocal()}, {"redis", redisStore}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rule := Rule{Algorithm: TokenBucket, ReplenishRate: 0.1, Burst: 100}
			now := time.Now()
			allow := func(cost int64) Decision {
				d, err := tc.store.Allow(ctx, "k", rule, cost, now)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			settle := func(delta int64) {
				if err := tc.store.Settle(ctx, "k", rule, delta, now); err != nil {
					t.Fatal(err)
				}
			}
			if d := allow(80); !d.Allowed || d.Remaining != 20 {
				t.Fatalf("reserve 80 of 100: %+v", d)
			}
			settle(-50) // used 30 of the 80
			if d := allow(70); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("after a refund of 50: %+v, want 70 allowed and 0 left", d)
			}
			settle(30) // used 100 of the 70: 30 of debt
			if d := allow(1); d.Allowed || d.RetryAfter < 300*time.Second || d.Remaining != 0 {
				t.Fatalf("in debt: %+v, want denied for ≥ 310 s (31 tokens at 0.1/s), 0 remaining", d)
			}
			settle(-1000) // a refund never lifts the bucket above its burst
			if d := allow(100); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("after a huge refund: %+v, want exactly the burst", d)
			}
			sw := Rule{Algorithm: SlidingWindow, Limit: 10, Window: time.Minute}
			if d, _ := tc.store.Allow(ctx, "w", sw, 10, now); !d.Allowed {
				t.Fatal("sliding window: first request denied")
			}
			if err := tc.store.Settle(ctx, "w", sw, -10, now); err != nil {
				t.Fatal(err)
			}
			if d, _ := tc.store.Allow(ctx, "w", sw, 1, now); d.Allowed {
				t.Fatal("a sliding window must keep its estimate")
			}
		})
	}
}

// TestFailoverSettleFallsBack: with the shared store down, a settlement
// lands in the local share, as the decisions do.
func TestFailoverSettleFallsBack(t *testing.T) {
	down := StoreFunc(func(context.Context, string, Rule, int64, time.Time) (Decision, error) {
		return Decision{}, context.DeadlineExceeded
	})
	local := NewLocal()
	f, err := NewFailover(down, FailoverLocal(local), FailoverShare(0.5))
	if err != nil {
		t.Fatal(err)
	}
	f.Trip()
	ctx, rule, now := context.Background(), Rule{Algorithm: TokenBucket, ReplenishRate: 0.1, Burst: 100}, time.Now()
	if d, err := f.Allow(ctx, "k", rule, 50, now); err != nil || !d.Allowed {
		t.Fatalf("fallback decision: %+v %v", d, err)
	}
	if err := f.Settle(ctx, "k", rule, -40, now); err != nil {
		t.Fatal(err)
	}
	// The local share is 50 tokens: 50 taken, 20 (half of 40) given back.
	if d, _ := f.Allow(ctx, "k", rule, 20, now); !d.Allowed {
		t.Fatalf("after the local refund: %+v", d)
	}
}

// TestSettleRatesThatPrintWithAnExponent: a settlement works on
// redis-server and on the embedded server alike whatever the rate. The
// embedded server's Lua (gopher-lua) reads a number with an exponent and
// no point ("5e-05", "1e+06") as nil, so a rate formatted that way failed
// every settlement there while the decisions, formatted without an
// exponent, went on.
func TestSettleRatesThatPrintWithAnExponent(t *testing.T) {
	for _, kb := range []backend{serverBackend, embeddedBackend} {
		t.Run(kb.name, func(t *testing.T) {
			s := newRedisStoreAt(t, kb.start(t))
			ctx, now := context.Background(), time.Now()
			// One token per 20,000 s: refill plays no part.
			slow := Rule{Algorithm: TokenBucket, ReplenishRate: 5e-05, Burst: 3}
			if d, err := s.Allow(ctx, "slow", slow, 3, now); err != nil || !d.Allowed {
				t.Fatalf("take the burst: %+v %v", d, err)
			}
			if err := s.Settle(ctx, "slow", slow, -2, now); err != nil {
				t.Fatalf("refund 2 at rate %v: %v", slow.ReplenishRate, err)
			}
			if d, err := s.Allow(ctx, "slow", slow, 2, now); err != nil || !d.Allowed || d.Remaining != 0 {
				t.Fatalf("after a refund of 2: %+v %v, want 2 allowed and 0 left", d, err)
			}
			// A million tokens a second (a fleet's LLM token budget).
			fast := Rule{Algorithm: TokenBucket, ReplenishRate: 1e6, Burst: 1e6}
			if d, err := s.Allow(ctx, "fast", fast, 1e6, now); err != nil || !d.Allowed {
				t.Fatalf("take the burst: %+v %v", d, err)
			}
			if err := s.Settle(ctx, "fast", fast, -1000, now); err != nil {
				t.Fatalf("refund 1000 at rate %v: %v", fast.ReplenishRate, err)
			}
		})
	}
}

// TestFailoverSettlesPerShard: on a real Redis Cluster (three masters, no
// replicas) one master is SIGKILLed and its slot's breaker opens. A tenant
// on another master still settles in Redis, as its decisions are still
// made there: the refund is in the shared bucket. The settlement used to
// follow the worst breaker of all (State), so one lost master sent every
// tenant's refunds to the local share, and the shared buckets kept the
// estimates.
func TestFailoverSettlesPerShard(t *testing.T) {
	c := redistest.StartCluster(t, redisproc.ClusterSpec{Masters: 3})
	client, err := OpenRedis(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	rs := NewRedis(client)
	f, err := NewFailover(rs, FailoverTimeout(time.Second), FailoverBreaker(3, time.Hour), FailoverBreakerSpan(0))
	if err != nil {
		t.Fatal(err)
	}
	// Two tenants on different masters.
	rule := Rule{Algorithm: TokenBucket, ReplenishRate: 0.001, Burst: 100} // a token per 1000 s
	lost := "tenant-0"
	lostMaster := c.MasterOf(rs.RedisKey(lost, TokenBucket))
	healthy := ""
	for i := 1; healthy == ""; i++ {
		k := "tenant-" + strconv.Itoa(i)
		if c.MasterOf(rs.RedisKey(k, TokenBucket)) != lostMaster {
			healthy = k
		}
	}
	ctx, now := context.Background(), time.Now()
	if d, err := f.Allow(ctx, healthy, rule, 80, now); err != nil || !d.Allowed || d.Remaining != 20 {
		t.Fatalf("reserve 80 of 100 in Redis: %+v %v", d, err)
	}
	c.KillNode(lostMaster)
	for range 3 { // the threshold: the lost master's slot breaker opens
		if _, err := f.Allow(ctx, lost, rule, 1, now); err != nil {
			t.Fatal(err)
		}
	}
	if f.State() != BreakerOpen || f.RemoteDecisions() != 1 || f.Fallbacks() != 3 {
		t.Fatalf("after the master's loss: state %v, remote %d, fallbacks %d; want open, 1, 3", f.State(), f.RemoteDecisions(), f.Fallbacks())
	}
	if err := f.Settle(ctx, healthy, rule, -50, now); err != nil {
		t.Fatal(err)
	}
	tokens, err := client.HGet(ctx, rs.RedisKey(healthy, TokenBucket), "tokens").Float64()
	if err != nil {
		t.Fatal(err)
	}
	if tokens < 69.9 || tokens > 70.1 {
		t.Fatalf("shared bucket of %s (its master up) after a refund of 50: %.3f tokens, want 70 (20 + 50)", healthy, tokens)
	}
}
