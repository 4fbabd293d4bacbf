package ratelimit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// newRedisStore starts a real redis-server and returns a store over a new
// client to it, and the server.
func newRedisStore(t testing.TB, opts ...RedisOption) (*RedisStore, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	return newRedisStoreAt(t, srv.URL(), opts...), srv
}

// newRedisStoreAt returns a store over a new client to url, closed at the
// end of the test.
func newRedisStoreAt(t testing.TB, url string, opts ...RedisOption) *RedisStore {
	t.Helper()
	c, err := OpenRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return NewRedis(c, opts...)
}

func rawClient(t testing.TB, srv *redistest.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRedisSlidingWindow(t *testing.T) {
	s, srv := newRedisStore(t)
	ctx := context.Background()
	rule := Rule{Algorithm: SlidingWindow, Limit: 5, Window: 300 * time.Millisecond}
	for i := 0; i < 5; i++ {
		d, err := s.Allow(ctx, "t1:ai", rule, 1, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed || d.Remaining != int64(4-i) || d.Limit != 5 || d.RetryAfter != 0 {
			t.Fatalf("request %d: %+v, want allowed with remaining %d", i+1, d, 4-i)
		}
	}
	d, err := s.Allow(ctx, "t1:ai", rule, 1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > rule.Window {
		t.Fatalf("6th request: %+v, want denied with 0 < RetryAfter ≤ %v", d, rule.Window)
	}
	// Another key is independent.
	if d, _ := s.Allow(ctx, "t2:ai", rule, 1, time.Now()); !d.Allowed {
		t.Fatalf("other key: %+v, want allowed", d)
	}
	// RetryAfter is honest: after it, the same request passes.
	time.Sleep(d.RetryAfter + 2*time.Millisecond)
	if d, err := s.Allow(ctx, "t1:ai", rule, 1, time.Now()); err != nil || !d.Allowed {
		t.Fatalf("after RetryAfter: %+v %v, want allowed", d, err)
	}

	// Keys carry the hash tag, a TTL, and one member per admitted request.
	rc := rawClient(t, srv)
	key := s.RedisKey("t1:ai", SlidingWindow)
	if key != "levee:rl:{t1:ai}:sw" {
		t.Errorf("key %q", key)
	}
	n, err := rc.ZCard(ctx, key).Result()
	if err != nil || n < 1 || n > 5 {
		t.Errorf("ZCARD %s = %d %v, want 1..5", key, n, err)
	}
	for _, k := range []string{key, key + ":n"} {
		ttl, err := rc.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > rule.Window+time.Second {
			t.Errorf("PTTL %s = %v %v, want (0, window+1s]", k, ttl, err)
		}
	}
	// (KeySlot is checked against a real cluster in TestKeySlotMatchesRedis.)
	if slot1, slot2 := KeySlot(key), KeySlot(key+":n"); slot1 != slot2 {
		t.Errorf("keys in different slots: %d %d", slot1, slot2)
	}
}

func TestRedisSlidingWindowCost(t *testing.T) {
	s, _ := newRedisStore(t)
	ctx := context.Background()
	rule := Rule{Algorithm: SlidingWindow, Limit: 10, Window: 250 * time.Millisecond}
	steps := []struct {
		cost      int64
		allowed   bool
		remaining int64
	}{
		{4, true, 6},
		{5, true, 1},
		{2, false, 1},
		{1, true, 0},
		{1, false, 0},
	}
	for i, st := range steps {
		d, err := s.Allow(ctx, "k", rule, st.cost, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != st.allowed || d.Remaining != st.remaining {
			t.Fatalf("step %d cost %d: %+v, want allowed %v remaining %d", i, st.cost, d, st.allowed, st.remaining)
		}
	}
	// A cost of 5 needs the first two entries (4, then 5) to leave; the
	// first leaves before the second, so RetryAfter points at the second.
	d, _ := s.Allow(ctx, "k", rule, 5, time.Now())
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > rule.Window {
		t.Fatalf("cost 5: %+v", d)
	}
	time.Sleep(d.RetryAfter + 2*time.Millisecond)
	if d, _ := s.Allow(ctx, "k", rule, 5, time.Now()); !d.Allowed {
		t.Fatalf("cost 5 after RetryAfter: %+v, want allowed", d)
	}
}

func TestRedisTokenBucket(t *testing.T) {
	s, srv := newRedisStore(t)
	ctx := context.Background()
	rule := Rule{Algorithm: TokenBucket, ReplenishRate: 20, Burst: 3}
	for i := 0; i < 3; i++ {
		d, err := s.Allow(ctx, "t:agent", rule, 1, time.Now())
		if err != nil || !d.Allowed || d.Limit != 3 || d.Remaining != int64(2-i) {
			t.Fatalf("request %d: %+v %v, want allowed remaining %d", i+1, d, err, 2-i)
		}
	}
	d, err := s.Allow(ctx, "t:agent", rule, 1, time.Now())
	if err != nil || d.Allowed {
		t.Fatalf("4th: %+v %v, want denied", d, err)
	}
	// One token takes 50 ms at 20/s; some of it has already passed.
	if d.RetryAfter <= 0 || d.RetryAfter > 50*time.Millisecond {
		t.Fatalf("RetryAfter %v, want (0, 50ms]", d.RetryAfter)
	}
	time.Sleep(d.RetryAfter + 2*time.Millisecond)
	if d, _ := s.Allow(ctx, "t:agent", rule, 1, time.Now()); !d.Allowed {
		t.Fatalf("after RetryAfter: %+v, want allowed", d)
	}
	rc := rawClient(t, srv)
	key := s.RedisKey("t:agent", TokenBucket)
	if key != "levee:rl:{t:agent}:tb" {
		t.Errorf("key %q", key)
	}
	if ttl := rc.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 1200*time.Millisecond {
		// refilling 3 tokens at 20/s takes 150 ms; + 1 s slack
		t.Errorf("PTTL %v, want (0, 1.2s]", ttl)
	}
}

func TestRedisBadRequests(t *testing.T) {
	s, _ := newRedisStore(t)
	ctx := context.Background()
	sw := Rule{Algorithm: SlidingWindow, Limit: 3, Window: time.Second}
	tests := []struct {
		name string
		rule Rule
		cost int64
		want string
		is   error
	}{
		{"invalid rule", Rule{Algorithm: "leaky"}, 1, "algorithm", nil},
		{"zero cost", sw, 0, "cost 0", nil},
		{"cost above capacity", sw, 4, "capacity", ErrCostExceedsCapacity},
		{"cost above burst", Rule{Algorithm: TokenBucket, ReplenishRate: 1, Burst: 2}, 3, "capacity", ErrCostExceedsCapacity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Allow(ctx, "k", tt.rule, tt.cost, time.Now())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("err %v is not %v", err, tt.is)
			}
		})
	}
}

func TestRedisScriptsSurviveRestartAndFlush(t *testing.T) {
	s, srv := newRedisStore(t)
	ctx := context.Background()
	rule := Rule{Algorithm: SlidingWindow, Limit: 2, Window: time.Second}
	if _, err := s.Allow(ctx, "k", rule, 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	// SCRIPT FLUSH makes EVALSHA answer NOSCRIPT; the store falls back to EVAL.
	if err := rawClient(t, srv).ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Allow(ctx, "k", rule, 1, time.Now()); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after SCRIPT FLUSH: %+v %v, want allowed with 0 remaining", d, err)
	}
	srv.Kill()
	if _, err := s.Allow(ctx, "k", rule, 1, time.Now()); err == nil {
		t.Fatal("no error while Redis is down")
	}
	srv.Restart()
	// The new Redis is empty (no persistence): the window starts again.
	var d Decision
	var err error
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d, err = s.Allow(ctx, "k", rule, 1, time.Now()); err == nil {
			break
		}
	}
	if err != nil || !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after restart: %+v %v, want allowed with 1 remaining", d, err)
	}
}

// TestRedisTimeoutIsBoundedByContext: a decision's context deadline bounds
// the wait for a Redis that does not answer (OpenRedis enables
// context_timeout_enabled), whatever the client's read timeout. Here the
// read timeout is 10 minutes: an Allow that does not end within the 30 s
// below waited for it, not for its 20 ms context.
func TestRedisTimeoutIsBoundedByContext(t *testing.T) {
	srv := redistest.Start(t)
	s := newRedisStoreAt(t, srv.URL()+"?read_timeout=10m")
	rule := Rule{Algorithm: SlidingWindow, Limit: 2, Window: time.Second}
	if _, err := s.Allow(context.Background(), "k", rule, 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Allow(ctx, "k", rule, 1, time.Now())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no error from a paused Redis")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Allow with a 20 ms deadline still waiting for a paused Redis after 30 s: the context does not bound the read")
	}
}

// The window's cost counter is rebuilt from the sorted set when it is lost
// (evicted under maxmemory, deleted by hand), and kept equal to the sum of
// the costs left in the window as entries expire.
func TestRedisSlidingWindowCounter(t *testing.T) {
	s, srv := newRedisStore(t)
	rc := rawClient(t, srv)
	ctx := context.Background()
	rule := Rule{Algorithm: SlidingWindow, Limit: 5, Window: 150 * time.Millisecond}
	key := s.RedisKey("c", SlidingWindow)
	for _, cost := range []int64{1, 2} {
		if d, err := s.Allow(ctx, "c", rule, cost, time.Now()); err != nil || !d.Allowed {
			t.Fatalf("cost %d: %+v %v", cost, d, err)
		}
	}
	if n, _ := rc.Get(ctx, key+":n").Int64(); n != 3 {
		t.Fatalf("counter %d, want 3", n)
	}
	rc.Del(ctx, key+":n")
	d, err := s.Allow(ctx, "c", rule, 2, time.Now())
	if err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after losing the counter: %+v %v, want allowed with 0 remaining (3 rebuilt + 2)", d, err)
	}
	if d, _ := s.Allow(ctx, "c", rule, 1, time.Now()); d.Allowed {
		t.Fatalf("over the limit after the rebuild: %+v", d)
	}
	time.Sleep(rule.Window + 10*time.Millisecond)
	// Everything expired: a denied-then-allowed sequence starts from 0.
	if d, _ := s.Allow(ctx, "c", rule, 4, time.Now()); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after the window: %+v, want allowed with 1 remaining", d)
	}
	if n, _ := rc.Get(ctx, key+":n").Int64(); n != 4 {
		t.Fatalf("counter %d after expiry, want 4", n)
	}
	if z := rc.ZCard(ctx, key).Val(); z != 1 {
		t.Fatalf("ZCARD %d after expiry, want 1", z)
	}
}
