package ratelimit

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
)

// outageCase is one way Redis goes away mid-run and comes back.
type outageCase struct {
	name    string
	fail    func(*redistest.Server)
	recover func(*redistest.Server)
}

var outageCases = []outageCase{
	// SIGKILL: connections reset, calls fail at once.
	{"killed", (*redistest.Server).Kill, (*redistest.Server).Restart},
	// SIGSTOP: connections stay open, nothing answers; only the timeout
	// saves the caller.
	{"hung", (*redistest.Server).Pause, (*redistest.Server).Resume},
}

// Redis dies mid-run under three gateways' load: no decision fails, the
// decisions while it is down are local (the timeout and the breaker keep
// them from waiting it out), fallbacks are counted and every gateway is back
// on Redis after its return. Decision latency is logged, not asserted: this
// machine is shared, and TestFailoverTimeout checks the timeout itself.
func TestFailoverRedisOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load; skipped with -short")
	}
	for _, oc := range outageCases {
		t.Run(oc.name, func(t *testing.T) { testOutage(t, oc) })
	}
}

func testOutage(t *testing.T, oc outageCase) {
	const (
		gateways = 3
		workers  = 2 // per gateway
		limit    = 300
		runFor   = 3500 * time.Millisecond
		failAt   = 800 * time.Millisecond
		downFor  = 1000 * time.Millisecond
		// backWithin bounds the wait for every gateway to be back on
		// Redis. The breaker probes every 500 ms; the bound is generous
		// because a starved process may miss a few probes.
		backWithin = 30 * time.Second
	)
	srv := redistest.Start(t)
	rule := Rule{Algorithm: SlidingWindow, Limit: limit, Window: time.Second}
	const key = "tenant-a:ai"
	stores := make([]Store, gateways)
	fos := make([]*Failover, gateways)
	for i := range stores {
		// Defaults as the gateway uses them: 5 ms timeout, breaker 3 / 500 ms.
		f, err := NewFailover(newRedisStoreAt(t, srv.URL()), FailoverShare(1.0/gateways))
		if err != nil {
			t.Fatal(err)
		}
		stores[i], fos[i] = f, f
	}

	// counts is every gateway's fallbacks and remote decisions at a moment.
	type counts struct{ fallbacks, remote []uint64 }
	snap := func() counts {
		var c counts
		for _, f := range fos {
			c.fallbacks = append(c.fallbacks, f.Fallbacks())
			c.remote = append(c.remote, f.RemoteDecisions())
		}
		return c
	}
	outage := make(chan [2]counts, 1) // when Redis had gone, and before it returned
	recovered := make(chan time.Duration, 1)
	var driving atomic.Bool
	driving.Store(true)
	go func() {
		time.Sleep(failAt)
		oc.fail(srv)
		gone := snap()
		time.Sleep(downFor)
		still := snap()
		oc.recover(srv)
		back := time.Now()
		outage <- [2]counts{gone, still}
		// Global again: every gateway has had a decision from Redis since
		// it came back (only a probe that succeeded, closing the breaker,
		// or a closed breaker reaches Redis). Each gateway is judged on its
		// own, and decisions go on after the run until all are back: on a
		// starved machine a breaker may close and open again.
		base := snap()
		isBack := make([]bool, gateways)
		for time.Since(back) < backWithin {
			all := true
			for i, f := range fos {
				isBack[i] = isBack[i] || f.RemoteDecisions() > base.remote[i]
				all = all && isBack[i]
				if !isBack[i] && !driving.Load() {
					_, _ = f.Allow(context.Background(), key, rule, 1, time.Now())
				}
			}
			if all {
				recovered <- time.Since(back)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		recovered <- -1
	}()

	// 3 × 2 workers × 250/s = 1500/s offered, 5× the limit.
	res := drive(t, stores, key, rule, runFor, workers, 250)
	driving.Store(false)
	out := <-outage
	rec := <-recovered

	var fallbacks, downFallbacks, downRemote uint64
	for i, f := range fos {
		fallbacks += f.Fallbacks()
		downFallbacks += out[1].fallbacks[i] - out[0].fallbacks[i]
		downRemote += out[1].remote[i] - out[0].remote[i]
	}
	p50, p99, pmax := percentile(res.latencies, 0.5), percentile(res.latencies, 0.99), percentile(res.latencies, 1)
	t.Logf("%s: %d decisions, admitted %d, errors %d; latency p50 %v p99 %v max %v (the contract: p99 ≤ 10 ms); while down %d local, %d from Redis; fallbacks in all %d; back to Redis %v after it returned",
		oc.name, res.offered.Load(), res.admitted.Load(), res.errors.Load(), p50, p99, pmax, downFallbacks, downRemote, fallbacks, rec)

	if res.errors.Load() != 0 {
		t.Fatalf("%d decisions returned an error; first: %v", res.errors.Load(), res.firstErr)
	}
	for i := range fos {
		if out[1].fallbacks[i] == out[0].fallbacks[i] {
			t.Errorf("gateway %d counted no fallback while Redis was down", i)
		}
	}
	// While Redis is down it answers nothing: only calls in flight when it
	// went (one per worker) may have come back from it.
	if downRemote > gateways*workers {
		t.Errorf("%d decisions came from Redis while it was down (%d local); at most the %d in flight when it went", downRemote, downFallbacks, gateways*workers)
	}
	if rec < 0 {
		t.Fatalf("not every gateway back on Redis within %v after it returned", backWithin)
	}
	// Bound on the total: at most one global window per second of run,
	// plus one extra window of local shares (the outage) and one more
	// (Redis restarts empty). Three gateways deciding alone would admit
	// 3 × 3.5 windows ≈ 3150.
	if max := float64(limit) * (runFor.Seconds() + 2); float64(res.admitted.Load()) > max {
		t.Errorf("admitted %d, more than %.0f: the outage leaked", res.admitted.Load(), max)
	}
}

// Redis is down when the gateway starts: Open still succeeds and decisions
// fall back to the local share at once.
func TestOpenRedisDownAtStart(t *testing.T) {
	port := deadPort(t)
	yes := true
	store, closer, err := Open(StoreConfig{Kind: "redis", URL: "redis://127.0.0.1:" + port, Share: 0.5, FailOpen: &yes})
	if err != nil {
		t.Fatalf("Open with Redis down: %v", err)
	}
	defer closer.Close()
	f, ok := store.(*Failover)
	if !ok {
		t.Fatalf("Open kind redis returned %T, want *Failover", store)
	}
	if f.State() != BreakerOpen {
		t.Errorf("breaker %v after a failed warm-up, want open (no caller should pay the timeout)", f.State())
	}
	rule := Rule{Algorithm: SlidingWindow, Limit: 4, Window: time.Minute}
	var allowed int
	for i := 0; i < 5; i++ {
		d, err := f.Allow(context.Background(), "k", rule, 1, time.Now())
		if err != nil {
			t.Fatalf("decision %d: %v", i, err)
		}
		if d.Limit != 2 {
			t.Fatalf("decision %d limit %d, want the local share 2", i, d.Limit)
		}
		if d.Allowed {
			allowed++
		}
	}
	if allowed != 2 || f.Fallbacks() != 5 {
		t.Fatalf("allowed %d fallbacks %d, want 2 and 5", allowed, f.Fallbacks())
	}
}

// Open warms a reachable Redis: scripts loaded, breaker closed, and the
// first decision comes from Redis.
func TestOpenRedisWarmsUp(t *testing.T) {
	srv := redistest.Start(t)
	// A generous timeout: the first decision's coming from Redis is the
	// point, not its speed on a loaded test machine.
	store, closer, err := Open(StoreConfig{Kind: "redis", URL: srv.URL(), Share: 0.5, TimeoutMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	f := store.(*Failover)
	if f.State() != BreakerClosed {
		t.Fatalf("breaker %v after warm-up, want closed", f.State())
	}
	exists, err := rawClient(t, srv).ScriptExists(context.Background(), redisSlidingWindowScript.Hash(), redisTokenBucketScript.Hash()).Result()
	if err != nil || len(exists) != 2 || !exists[0] || !exists[1] {
		t.Fatalf("SCRIPT EXISTS = %v %v, want both loaded", exists, err)
	}
	d, err := f.Allow(context.Background(), "k", Rule{Algorithm: SlidingWindow, Limit: 4, Window: time.Minute}, 1, time.Now())
	if err != nil || !d.Allowed || d.Limit != 4 || f.RemoteDecisions() != 1 {
		t.Fatalf("%+v %v remote %d, want a Redis decision with the global limit 4", d, err, f.RemoteDecisions())
	}
}

// Fail-closed through Open: Redis down means deny, with a Retry-After.
func TestOpenRedisFailClosed(t *testing.T) {
	no := false
	store, closer, err := Open(StoreConfig{Kind: "redis", URL: "redis://127.0.0.1:" + deadPort(t), FailOpen: &no, TimeoutMs: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	d, err := store.Allow(context.Background(), "k", Rule{Algorithm: TokenBucket, ReplenishRate: 5, Burst: 5}, 1, time.Now())
	if err != nil || d.Allowed || d.RetryAfter <= 0 {
		t.Fatalf("%+v %v, want a denial with RetryAfter > 0", d, err)
	}
}

// deadPort is a loopback port nothing listens on (a freshly stopped server).
func deadPort(t *testing.T) string {
	t.Helper()
	srv := redistest.Start(t)
	srv.Kill()
	_, port, _ := strings.Cut(srv.Addr(), ":")
	return port
}

// TestLocalShareAdmitsAnyAdmissibleCost: a request the global rule can
// admit is never impossible in a gateway's share. Three gateways share a
// token bucket of 90 (no refill to speak of); a request costs 60, more
// than the share of 30. With Redis SIGKILLed, its fallback decision is a
// decision — the share holds one such request, then denies with a
// Retry-After — not ErrCostExceedsCapacity, which the gateway answers 400
// "can never pass; lower its tokens" for a request that passes again once
// Redis is back. The in-process store with a share decides the same way.
func TestLocalShareAdmitsAnyAdmissibleCost(t *testing.T) {
	srv := redistest.Start(t)
	yes := true
	redisStore, closer, err := Open(StoreConfig{Kind: "redis", URL: srv.URL(), Share: 1.0 / 3, TimeoutMs: 1000, FailOpen: &yes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	localStore, _, err := Open(StoreConfig{Kind: "local", Share: 1.0 / 3})
	if err != nil {
		t.Fatal(err)
	}
	rule := Rule{Algorithm: TokenBucket, ReplenishRate: 0.001, Burst: 90}
	ctx, now := context.Background(), time.Now()
	if d, err := redisStore.Allow(ctx, "before", rule, 60, now); err != nil || !d.Allowed {
		t.Fatalf("cost 60 of 90 with Redis up: %+v %v", d, err)
	}
	srv.Kill()
	for _, s := range []struct {
		name  string
		store Store
	}{{"redis down", redisStore}, {"local share", localStore}} {
		d, err := s.store.Allow(ctx, "k", rule, 60, now)
		if err != nil || !d.Allowed {
			t.Fatalf("%s: cost 60 of 90 in a share of 30: %+v %v, want allowed (the share holds one such request)", s.name, d, err)
		}
		d, err = s.store.Allow(ctx, "k", rule, 60, now)
		if err != nil || d.Allowed || d.RetryAfter <= 0 {
			t.Fatalf("%s: a second cost 60 at once: %+v %v, want denied with a Retry-After", s.name, d, err)
		}
	}
	if f := redisStore.(*Failover); f.Fallbacks() != 2 {
		t.Errorf("fallbacks %d, want 2", f.Fallbacks())
	}
	// The cost above the whole rule is still the caller's error.
	if _, err := redisStore.Allow(ctx, "k", rule, 91, now); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Errorf("cost 91 of 90: %v, want ErrCostExceedsCapacity", err)
	}
}
