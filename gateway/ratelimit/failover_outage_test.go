package ratelimit

import (
	"context"
	"strings"
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
// decision latency stays bounded by timeout + breaker, fallbacks are counted
// and every gateway is back on Redis within 5 s of its return.
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
		limit    = 300
		runFor   = 3500 * time.Millisecond
		failAt   = 800 * time.Millisecond
		downFor  = 1000 * time.Millisecond
	)
	srv := redistest.Start(t)
	rule := Rule{Algorithm: SlidingWindow, Limit: limit, Window: time.Second}
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

	type mark struct {
		at        time.Duration
		fallbacks uint64
		remote    []uint64
	}
	marks := make(chan mark, 1)
	recovered := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		time.Sleep(failAt)
		oc.fail(srv)
		time.Sleep(downFor)
		oc.recover(srv)
		back := time.Now()
		m := mark{at: time.Since(start)}
		for _, f := range fos {
			m.fallbacks += f.Fallbacks()
			m.remote = append(m.remote, f.RemoteDecisions())
		}
		marks <- m
		// Global again = every breaker closed and every gateway has had a
		// decision from Redis since it came back.
		for time.Since(back) < 5*time.Second {
			ok := true
			for i, f := range fos {
				if f.State() != BreakerClosed || f.RemoteDecisions() <= m.remote[i] {
					ok = false
				}
			}
			if ok {
				recovered <- time.Since(back)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		recovered <- -1
	}()

	// 3 × 2 workers × 250/s = 1500/s offered, 5× the limit.
	res := drive(t, stores, "tenant-a:ai", rule, runFor, 2, 250)
	m := <-marks
	rec := <-recovered

	var fallbacks uint64
	for _, f := range fos {
		fallbacks += f.Fallbacks()
	}
	p50, p99, pmax := percentile(res.latencies, 0.5), percentile(res.latencies, 0.99), percentile(res.latencies, 1)
	t.Logf("%s: %d decisions, admitted %d, errors %d; latency p50 %v p99 %v max %v; fallbacks %d (by recovery %d); back to Redis %v after it returned",
		oc.name, res.offered.Load(), res.admitted.Load(), res.errors.Load(), p50, p99, pmax, fallbacks, m.fallbacks, rec)

	if res.errors.Load() != 0 {
		t.Fatalf("%d decisions returned an error; first: %v", res.errors.Load(), res.firstErr)
	}
	if m.fallbacks == 0 {
		t.Fatal("no fallback counted while Redis was down")
	}
	// The outage lasts 1 s at ≈1500 decisions/s; most must have been local.
	if m.fallbacks < 500 {
		t.Errorf("only %d fallbacks during a 1 s outage at 1500 decisions/s", m.fallbacks)
	}
	// The contract is p99 ≤ 10 ms; this asserts a loose 50 ms so a busy CI
	// machine does not fail it, and the log above shows the real figure.
	if p99 > 50*time.Millisecond {
		t.Errorf("decision latency p99 %v across the outage, want ≤ 10 ms (asserted ≤ 50 ms)", p99)
	}
	if rec < 0 {
		t.Fatal("not back to Redis within 5 s after it returned")
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
