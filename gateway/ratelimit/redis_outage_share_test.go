package ratelimit

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/levee-lab/levee/internal/redisproc"
	"github.com/levee-lab/levee/internal/redistest"
)

// sureTimeout is the store timeout of the tests that judge accuracy: a
// killed Redis fails decisions at once (connection refused or reset), so a
// long timeout changes nothing there, and it keeps a loaded test machine's
// stalls (or -race) from sending decisions to the local shares while Redis
// is alive.
const sureTimeout = time.Second

// keyFallbacks counts the local shares' decisions by limit key, over every
// gateway: the fallbacks, and the local checks of the remote admissions
// that follow a fallback within the rule's span (Failover.gated).
type keyFallbacks struct {
	mu sync.Mutex
	n  map[string]int // guarded by mu
}

func (k *keyFallbacks) get(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n[key]
}

// countingLocal is a gateway's local share that counts its decisions by
// key in byKey. It is a Recorder as Local is (Record comes with the
// embedded Local), so the Failover bounds the fallback share by what Redis
// admitted, as a gateway's does; a StoreFunc wrapper was not one, and
// these tests measured an unbounded share no gateway runs.
type countingLocal struct {
	*Local
	byKey *keyFallbacks
}

func (c *countingLocal) Allow(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
	c.byKey.mu.Lock()
	c.byKey.n[key]++
	c.byKey.mu.Unlock()
	return c.Local.Allow(ctx, key, rule, cost, now)
}

// newGatewayStores returns n Failover stores, each over its own warmed-up
// Redis client to url and its own local share (1/n): n gateways' view of
// one limit. The fallbacks of all are counted by key.
func newGatewayStores(t *testing.T, url string, n int, opts ...FailoverOption) ([]Store, []*Failover, *keyFallbacks) {
	t.Helper()
	stores := make([]Store, n)
	fos := make([]*Failover, n)
	byKey := &keyFallbacks{n: map[string]int{}}
	for i := range stores {
		rs := newRedisStoreAt(t, url)
		if err := rs.Warm(context.Background(), 4); err != nil {
			t.Fatal(err)
		}
		counting := &countingLocal{Local: NewLocal(), byKey: byKey}
		f, err := NewFailover(rs, append([]FailoverOption{FailoverShare(1 / float64(n)), FailoverLocal(counting)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		stores[i], fos[i] = f, f
	}
	return stores, fos, byKey
}

// counted checks that every decision was either made by the shared store
// or counted as a fallback, and returns the fallbacks.
func counted(t *testing.T, fos []*Failover, offered int64) uint64 {
	t.Helper()
	var fallbacks, remote uint64
	for _, f := range fos {
		fallbacks += f.Fallbacks()
		remote += f.RemoteDecisions()
	}
	if remote+fallbacks != uint64(offered) {
		t.Errorf("remote %d + fallbacks %d ≠ %d decisions: some went uncounted", remote, fallbacks, offered)
	}
	return fallbacks
}

// waitGlobal keeps deciding (lightly) until every store's breakers are
// closed, for at most 5 s, and reports how long that took (-1: never).
func waitGlobal(fos []*Failover, keys []string, rule Rule) time.Duration {
	start := time.Now()
	for time.Since(start) < 5*time.Second {
		closed := true
		for _, f := range fos {
			for _, k := range keys {
				_, _ = f.Allow(context.Background(), k, rule, 1, time.Now())
			}
			if f.State() != BreakerClosed {
				closed = false
			}
		}
		if closed {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

// limitRules are the two algorithms with a global limit of 100/s, what
// they admit with the offered load far above it (want, for a run whose
// decisions spanned span), and what N local shares admit in total over an
// outage of whole seconds that began under such a load. Each gateway's
// share has recorded its Redis admissions (Recorder), so its bucket is as
// empty as the global one at the outage's start and its window as full.
var limitRules = limitRulesAt(100)

// limitRule is one of limitRules.
type limitRule struct {
	name   string
	rule   Rule
	want   func(d, span time.Duration) float64
	shares func(n int, d time.Duration) float64
}

// limitRulesAt is limitRules with a global limit of limit per second.
func limitRulesAt(limit int64) []limitRule {
	l := float64(limit)
	return []limitRule{
		{"sliding_window", Rule{Algorithm: SlidingWindow, Limit: limit, Window: time.Second},
			func(d, _ time.Duration) float64 { return l * math.Ceil(d.Seconds()) }, // a limit per window begun
			func(n int, d time.Duration) float64 {
				return float64(n) * math.Ceil(l/float64(n)) * d.Seconds() // a share per window
			}},
		// A burst of a second's tokens: a stall of the test machine shorter than
		// that loses no refill (a full bucket stops filling).
		{"token_bucket", Rule{Algorithm: TokenBucket, ReplenishRate: l, Burst: limit},
			func(_, span time.Duration) float64 { return l + l*span.Seconds() }, // a full bucket, then the rate while decisions came
			func(_ int, d time.Duration) float64 {
				return l * d.Seconds() // buckets emptied by the load, then the rate
			}},
	}
}

// Redis is SIGKILLed under the load of 3 and 5 gateways for two windows:
// meanwhile the gateways' fail-open shares admit the global limit ± 25 %,
// every decision is a Redis decision or a counted fallback, and all are
// global again once Redis is back.
func TestOutageShareKeepsTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of load; skipped with -short")
	}
	const (
		failAt  = time.Second
		outage  = 2 * time.Second // whole windows: what the shares admit is then exact
		runFor  = 4500 * time.Millisecond
		workers = 4
	)
	for _, kind := range []redisproc.Kind{redisproc.KindServer, redisproc.KindEmbedded} {
		for _, gateways := range []int{3, 5} {
			t.Run(fmt.Sprintf("%s/%d_gateways", kind, gateways), func(t *testing.T) {
				srv := redistest.StartKind(t, kind)
				stores, fos, _ := newGatewayStores(t, srv.URL(), gateways, FailoverTimeout(sureTimeout))
				var killedAt, restartedAt time.Time
				faultErr := make(chan error, 1)
				go func() { // not the test's goroutine: report, do not fail
					time.Sleep(failAt)
					killedAt = time.Now()
					if err := srv.Process.Kill(); err != nil {
						faultErr <- err
						return
					}
					time.Sleep(outage + 200*time.Millisecond)
					restartedAt = time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					faultErr <- srv.Process.Restart(ctx)
				}()
				results := make([]*loadResult, len(limitRules))
				var wg sync.WaitGroup
				for i, or := range limitRules {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// 400/s offered per rule in all, 4× the limit.
						results[i] = drive(t, stores, "tenant-out:"+or.name, or.rule, runFor, workers, 100/float64(gateways))
					}()
				}
				wg.Wait()
				if err := <-faultErr; err != nil {
					t.Fatal(err)
				}
				if restartedAt.After(killedAt.Add(runFor - failAt)) {
					t.Fatal("the run ended before Redis was restarted")
				}
				var offered int64
				for i, or := range limitRules {
					res := results[i]
					offered += res.offered.Load()
					if res.errors.Load() != 0 {
						t.Fatalf("%s: %d decisions failed; first: %v", or.name, res.errors.Load(), res.firstErr)
					}
					got := float64(res.admittedIn(killedAt, killedAt.Add(outage)))
					want := or.shares(gateways, outage)
					t.Logf("%s %d gateways %s: during the %v outage admitted %.0f, the global limit allows %.0f (%+.1f %%); offered %d in all",
						kind, gateways, or.name, outage, got, want, 100*(got-want)/want, res.offered.Load())
					if math.Abs(got-want) > 0.25*want {
						t.Errorf("%s: admitted %.0f during the outage, want %.0f ± 25 %%", or.name, got, want)
					}
				}
				fallbacks := counted(t, fos, offered)
				if fallbacks == 0 {
					t.Fatal("no fallback counted while Redis was down")
				}
				back := waitGlobal(fos, []string{"tenant-out:" + limitRules[0].name}, limitRules[0].rule)
				t.Logf("fallbacks %d; every breaker closed %v after the run", fallbacks, back)
				if back < 0 {
					t.Fatal("not back on Redis within 5 s after the run")
				}
			})
		}
	}
}

// A Redis Cluster master is SIGKILLed under five gateways' load; its
// replica takes over. Limits on that master's slots fall back to the local
// shares until then (global limit ± 25 %, every fallback counted); limits
// on the other masters never leave Redis (± 5 %, one breaker per slot);
// and all are global again after the failover.
func TestClusterMasterKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("a failover takes seconds; skipped with -short")
	}
	const (
		gateways = 5
		failAt   = 1500 * time.Millisecond
		runFor   = 7 * time.Second
	)
	cl := redistest.StartCluster(t, redisproc.ClusterSpec{Masters: 3, Replicas: 1})
	stores, fos, byKey := newGatewayStores(t, cl.URL(), gateways, FailoverTimeout(sureTimeout))
	rs := NewRedis(nil) // only for key names: the default prefix
	// One tenant per master; the one on master 0 loses it.
	keyOn := map[int]string{}
	for i := 0; len(keyOn) < 3 && i < 1000; i++ {
		k := fmt.Sprintf("tenant-%d:ai", i)
		m := cl.MasterOf(rs.RedisKey(k, TokenBucket))
		if _, ok := keyOn[m]; !ok {
			keyOn[m] = k
		}
	}
	if len(keyOn) != 3 {
		t.Fatalf("found tenants on masters %v only", keyOn)
	}
	tb := limitRules[1] // smooth: what the shares admit is exact over any span
	sw := limitRules[0]
	var killedAt, failedOverAt time.Time
	var newMaster int
	faultErr := make(chan error, 1)
	go func() { // not the test's goroutine: report, do not fail
		time.Sleep(failAt)
		killedAt = time.Now()
		if err := cl.Node(0).Kill(); err != nil {
			faultErr <- err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		newMaster, err = cl.Cluster.WaitFailover(ctx, 0)
		failedOverAt = time.Now()
		faultErr <- err
	}()
	type run struct {
		key  string
		rule Rule
		res  *loadResult
	}
	runs := []*run{{key: keyOn[0], rule: tb.rule}, {key: keyOn[1], rule: sw.rule}, {key: keyOn[2], rule: tb.rule}}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.res = drive(t, stores, r.key, r.rule, runFor, 2, 200/float64(gateways)) // 400/s per tenant, 4× its limit
		}()
	}
	wg.Wait()
	if err := <-faultErr; err != nil { // WaitFailover is bounded
		t.Fatal(err)
	}
	if failedOverAt.After(killedAt.Add(runFor - failAt)) {
		t.Fatalf("the failover took %v, longer than the run", failedOverAt.Sub(killedAt))
	}
	var offered int64
	for _, r := range runs {
		offered += r.res.offered.Load()
		if r.res.errors.Load() != 0 {
			t.Fatalf("%s: %d decisions failed; first: %v", r.key, r.res.errors.Load(), r.res.firstErr)
		}
	}
	fallbacks := counted(t, fos, offered)
	down := failedOverAt.Sub(killedAt)
	t.Logf("master 0 killed; node %d took over its slots %v later; fallbacks %d", newMaster, down.Round(time.Millisecond), fallbacks)
	if newMaster != 3 {
		t.Errorf("slots of master 0 taken over by node %d, want its replica 3", newMaster)
	}
	// The lost master's tenant, while it was lost.
	got := float64(runs[0].res.admittedIn(killedAt, failedOverAt))
	want := tb.shares(gateways, down)
	t.Logf("tenant on the lost master: admitted %.0f during the %v outage, the global limit allows %.0f (%+.1f %%)", got, down.Round(time.Millisecond), want, 100*(got-want)/want)
	if math.Abs(got-want) > 0.25*want {
		t.Errorf("tenant on the lost master: admitted %.0f during the outage, want %.0f ± 25 %%", got, want)
	}
	// The local shares' decisions by tenant: the fallbacks, and the
	// checks of the remote admissions that follow them within a span
	// (Failover.gated), so at least the fallbacks, all the lost tenant's.
	lost := byKey.get(keyOn[0])
	if lost == 0 || uint64(lost) < fallbacks || byKey.get(keyOn[1])+byKey.get(keyOn[2]) != 0 {
		t.Errorf("local decisions by tenant %d %d %d, fallbacks %d: want at least the fallbacks for the lost master's tenant, none for the others", lost, byKey.get(keyOn[1]), byKey.get(keyOn[2]), fallbacks)
	}
	// The other masters' tenants stayed global all along: their slots'
	// breakers never opened.
	for _, r := range runs[1:] {
		got, want := float64(r.res.admitted.Load()), sw.want(runFor, r.res.span())
		if r.rule.Algorithm == TokenBucket {
			want = tb.want(runFor, r.res.span())
		}
		t.Logf("tenant %s on a surviving master: admitted %.0f, want %.0f (%+.1f %%); fallbacks %d", r.key, got, want, 100*(got-want)/want, byKey.get(r.key))
		if n := byKey.get(r.key); n != 0 {
			t.Errorf("tenant %s on a surviving master: %d decisions fell back", r.key, n)
		}
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("tenant %s on a surviving master: admitted %.0f, want %.0f ± 5 %%", r.key, got, want)
		}
	}
	if back := waitGlobal(fos, []string{keyOn[0], keyOn[1], keyOn[2]}, tb.rule); back < 0 {
		t.Fatal("not every breaker closed within 5 s after the failover")
	}
}

// Decisions use Redis's clock: gateways whose clocks are up to 2 s apart
// admit what gateways with one clock admit, through one shared store. The
// same sliding-window script fed the callers' clocks instead of TIME
// admits far more — the failure this test would catch.
func TestSkewedClocksAdmitTheSame(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of load; skipped with -short")
	}
	const d = 2 * time.Second
	skews := map[int][]time.Duration{
		3: {-2 * time.Second, 0, 2 * time.Second},
		5: {-2 * time.Second, -time.Second, 0, time.Second, 2 * time.Second},
	}
	skewed := func(stores []Store, skews []time.Duration) []Store {
		out := make([]Store, len(stores))
		for i, s := range stores {
			skew := skews[i%len(skews)]
			out[i] = StoreFunc(func(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
				return s.Allow(ctx, key, rule, cost, now.Add(skew))
			})
		}
		return out
	}
	for _, b := range []backend{serverBackend, embeddedBackend} {
		for _, gateways := range []int{3, 5} {
			t.Run(fmt.Sprintf("%s/%d_gateways", b.name, gateways), func(t *testing.T) {
				url := b.start(t)
				stores, fos, _ := newGatewayStores(t, url, gateways, FailoverTimeout(sureTimeout))
				// The same gateways, four tenants at once: each algorithm
				// with true clocks and with skewed clocks; 300/s offered
				// to each, 3× its limit.
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					results = map[string]*loadResult{}
					offered int64
				)
				for _, or := range limitRules {
					for _, sk := range []string{"same", "skewed"} {
						wg.Add(1)
						go func() {
							defer wg.Done()
							st := stores
							if sk == "skewed" {
								st = skewed(stores, skews[gateways])
							}
							res := drive(t, st, "tenant-clock:"+or.name+":"+sk, or.rule, d, 2, 150/float64(gateways))
							mu.Lock()
							results[or.name+"/"+sk] = res
							offered += res.offered.Load()
							mu.Unlock()
						}()
					}
				}
				wg.Wait()
				// A fallback decides on the gateway's own (skewed) clock;
				// a few, from a stall of the test machine longer than the
				// timeout, cannot move the counts compared below.
				if fallbacks := counted(t, fos, offered); float64(fallbacks) > 0.01*float64(offered) {
					t.Fatalf("%d fallbacks of %d decisions: local decisions would use the skewed clocks", fallbacks, offered)
				}
				for _, or := range limitRules {
					same, skew := results[or.name+"/same"], results[or.name+"/skewed"]
					if same.errors.Load()+skew.errors.Load() != 0 {
						t.Fatalf("decisions failed: %v %v", same.firstErr, skew.firstErr)
					}
					want := or.want(d, same.span())
					a, s := float64(same.admitted.Load()), float64(skew.admitted.Load())
					// The same count both ways; how close it is to the
					// limit is TestStoresShareOneLimit's to judge (a stall
					// of the test machine longer than the bucket's second of
					// tokens loses refill for both tenants alike).
					t.Logf("%s %d gateways %s: admitted %.0f with one clock, %.0f with clocks %v (the limit allows %.0f)", b.name, gateways, or.name, a, s, skews[gateways], want)
					if math.Abs(s-a) > 0.05*want {
						t.Errorf("%s: admitted %.0f with skewed clocks, %.0f without; want the same ± 5 %% of %.0f", or.name, s, a, want)
					}
				}
			})
		}
	}
	t.Run("control: the script on the callers' clocks", func(t *testing.T) {
		// The sliding window script with now taken from ARGV[5], the
		// caller's clock, instead of Redis's TIME.
		const timeLines = "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000000 + tonumber(t[2])"
		if !strings.Contains(redisSlidingWindowLua, timeLines) {
			t.Fatal("the sliding window script no longer reads TIME as this control expects")
		}
		callerClock := redis.NewScript(strings.Replace(redisSlidingWindowLua, timeLines, "local now = tonumber(ARGV[5])", 1))
		url := serverBackend.start(t)
		rule := limitRules[0].rule
		stores := make([]Store, 3)
		for i := range stores {
			rs := newRedisStoreAt(t, url)
			stores[i] = StoreFunc(func(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
				id := fmt.Sprintf("%s:%d:%d", rs.member, rs.seq.Add(1), cost)
				res, err := callerClock.Run(ctx, rs.client, rs.scriptKeys(key, SlidingWindow),
					rule.Limit, rule.Window.Microseconds(), cost, id, now.UnixMicro()).Int64Slice()
				if err != nil {
					return Decision{}, err
				}
				return Decision{Allowed: res[0] == 1}, nil
			})
		}
		res := drive(t, skewed(stores, skews[3]), "tenant-clock:caller", rule, d, 2, 50)
		got, want := float64(res.admitted.Load()), float64(rule.Limit)*d.Seconds()
		t.Logf("the script on the callers' clocks %v: admitted %.0f, the limit allows %.0f", skews[3], got, want)
		if res.errors.Load() != 0 {
			t.Fatal(res.firstErr)
		}
		if got < 1.25*want {
			t.Fatalf("admitted %.0f: skewed clocks should break a script that trusts them (want > %.0f)", got, 1.25*want)
		}
	})
}
