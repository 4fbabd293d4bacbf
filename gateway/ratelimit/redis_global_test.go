package ratelimit

import (
	"math"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
)

// Three gateways — here three Failover stores, each over its own Redis
// client, as three gateway processes would hold — share one global limit.
// Offered far above the limit, together they admit the limit, not 3× it.
func TestThreeStoresShareOneLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load; skipped with -short")
	}
	srv := redistest.Start(t)
	const (
		gateways = 3
		limit    = 200 // per second, global
		d        = 2 * time.Second
	)
	tests := []struct {
		name string
		rule Rule
		want float64 // admitted over d with the offered load far above it
	}{
		{"sliding_window", Rule{Algorithm: SlidingWindow, Limit: limit, Window: time.Second}, limit * d.Seconds()},
		// a full bucket of 50, then 200/s
		{"token_bucket", Rule{Algorithm: TokenBucket, ReplenishRate: limit, Burst: 50}, 50 + limit*d.Seconds()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stores := make([]Store, gateways)
			fos := make([]*Failover, gateways)
			for i := range stores {
				// A generous timeout: this test is about accounting; a
				// fallback on a busy test machine would add local admits.
				f, err := NewFailover(newRedisStoreAt(t, srv.URL()), FailoverShare(1.0/gateways), FailoverTimeout(250*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				stores[i], fos[i] = f, f
			}
			// 3 stores × 2 workers × 200/s = 1200/s offered, 6× the limit.
			res := drive(t, stores, "tenant-a:ai:"+tt.name, tt.rule, d, 2, 200)
			var fallbacks uint64
			for _, f := range fos {
				fallbacks += f.Fallbacks()
			}
			got := float64(res.admitted.Load())
			t.Logf("%s: offered %d, admitted %d (per gateway %d %d %d), want %.0f ± 5%%; fallbacks %d",
				tt.name, res.offered.Load(), res.admitted.Load(),
				res.perStore[0].Load(), res.perStore[1].Load(), res.perStore[2].Load(), tt.want, fallbacks)
			if res.errors.Load() != 0 {
				t.Fatalf("%d decisions failed; first: %v", res.errors.Load(), res.firstErr)
			}
			if off := float64(res.offered.Load()); off < 3*tt.want {
				t.Fatalf("offered only %.0f, not well above the limit (%.0f): the machine is too slow for this test", off, tt.want)
			}
			if fallbacks != 0 {
				t.Fatalf("%d decisions fell back to local; the global total is then not Redis's alone", fallbacks)
			}
			if math.Abs(got-tt.want) > 0.05*tt.want {
				t.Fatalf("admitted %.0f, want %.0f ± 5%%", got, tt.want)
			}
			for i := range res.perStore {
				if res.perStore[i].Load() == 0 {
					t.Errorf("gateway %d admitted nothing", i)
				}
			}
		})
	}
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
