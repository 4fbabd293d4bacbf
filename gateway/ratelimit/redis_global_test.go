package ratelimit

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// Many gateways — here N Failover stores, each over its own Redis client,
// as N gateway processes would hold — share one global limit through each
// kind of shared store. Offered far above the limit, together they admit
// the limit ± 5 %, not N times it, and no decision falls back.
func TestStoresShareOneLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load; skipped with -short")
	}
	const (
		limit = 200 // per second, global
		d     = 2 * time.Second
	)
	rules := []struct {
		name string
		rule Rule
		// want is the admitted count with the offered load far above the
		// limit, for a run whose decisions spanned span.
		want func(span time.Duration) float64
	}{
		// a limit per whole window begun: the run lasts two windows
		{"sliding_window", Rule{Algorithm: SlidingWindow, Limit: limit, Window: time.Second}, func(time.Duration) float64 { return limit * d.Seconds() }},
		// a full bucket of 50, then 200/s for as long as decisions came
		{"token_bucket", Rule{Algorithm: TokenBucket, ReplenishRate: limit, Burst: 50}, func(span time.Duration) float64 { return 50 + limit*span.Seconds() }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			url := b.start(t)
			for _, gateways := range []int{3, 5} {
				for _, tt := range rules {
					t.Run(fmt.Sprintf("%d_gateways/%s", gateways, tt.name), func(t *testing.T) {
						stores := make([]Store, gateways)
						fos := make([]*Failover, gateways)
						for i := range stores {
							rs := newRedisStoreAt(t, url)
							// Connections and scripts ready, as a gateway's
							// store is after Open.
							if err := rs.Warm(context.Background(), 4); err != nil {
								t.Fatal(err)
							}
							// A generous timeout: this test is about accounting; a
							// fallback on a busy test machine would add local admits.
							f, err := NewFailover(rs, FailoverShare(1/float64(gateways)), FailoverTimeout(250*time.Millisecond))
							if err != nil {
								t.Fatal(err)
							}
							stores[i], fos[i] = f, f
						}
						// 1200/s offered in all, 6× the limit, whatever the number of gateways.
						res := drive(t, stores, fmt.Sprintf("tenant-a:ai:%s:%d", tt.name, gateways), tt.rule, d, 4, 300/float64(gateways))
						var fallbacks, remote uint64
						for _, f := range fos {
							fallbacks += f.Fallbacks()
							remote += f.RemoteDecisions()
						}
						got, want := float64(res.admitted.Load()), tt.want(res.span())
						t.Logf("%s, %d gateways, %s: offered %d over %v, admitted %d (%+.1f %% of %.0f), per gateway %v; fallbacks %d; decision p50 %v p99 %v",
							b.name, gateways, tt.name, res.offered.Load(), res.span().Round(time.Millisecond), res.admitted.Load(), 100*(got-want)/want, want,
							perStore(res), fallbacks, percentile(res.latencies, 0.5), percentile(res.latencies, 0.99))
						if res.errors.Load() != 0 {
							t.Fatalf("%d decisions failed; first: %v", res.errors.Load(), res.firstErr)
						}
						if remote+fallbacks != uint64(res.offered.Load()) {
							t.Fatalf("remote %d + fallbacks %d ≠ %d decisions: some went uncounted", remote, fallbacks, res.offered.Load())
						}
						if off := float64(res.offered.Load()); off < 3*want {
							t.Fatalf("offered only %.0f, not well above the limit (%.0f): the machine is too slow for this test", off, want)
						}
						if fallbacks != 0 {
							t.Fatalf("%d decisions fell back to local; the global total is then not Redis's alone", fallbacks)
						}
						if math.Abs(got-want) > 0.05*want {
							t.Fatalf("admitted %.0f, want %.0f ± 5%%", got, want)
						}
						for i := range res.perStore {
							if res.perStore[i].Load() == 0 {
								t.Errorf("gateway %d admitted nothing", i)
							}
						}
					})
				}
			}
		})
	}
}

// perStore is the admitted count of each store.
func perStore(res *loadResult) []int64 {
	out := make([]int64, len(res.perStore))
	for i := range res.perStore {
		out[i] = res.perStore[i].Load()
	}
	return out
}

// The leak the Redis store closes: three gateways deciding alone, each with
// the whole limit, admit about three times it. This is also the proof that
// the test above can fail.
func TestThreeLocalStoresLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load; skipped with -short")
	}
	const limit = 200
	rule := Rule{Algorithm: SlidingWindow, Limit: limit, Window: time.Second}
	stores := []Store{NewLocal(), NewLocal(), NewLocal()}
	res := drive(t, stores, "tenant-a:ai", rule, 2*time.Second, 2, 200)
	got, global := float64(res.admitted.Load()), float64(limit*2)
	t.Logf("three local stores: offered %d, admitted %.0f, the global limit allows %.0f", res.offered.Load(), got, global)
	if got < 2.5*global {
		t.Fatalf("admitted %.0f, want about 3 × %.0f: local stores should each admit the whole limit", got, global)
	}
}
