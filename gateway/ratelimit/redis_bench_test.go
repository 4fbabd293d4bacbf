package ratelimit

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
)

// benchCallers is the number of concurrent deciders in the *64 benchmarks.
const benchCallers = 64

// benchRules never deny, so every decision does the full write path.
var benchRules = []struct {
	name string
	rule Rule
}{
	{"sliding_window", Rule{Algorithm: SlidingWindow, Limit: 1 << 40, Window: 100 * time.Millisecond}},
	{"token_bucket", Rule{Algorithm: TokenBucket, ReplenishRate: 1e12, Burst: 1 << 40}},
}

// benchPacedRate is the per-caller rate of the paced sub-benchmarks: 64 × 100
// = 6400 decisions/s, about what one gateway process serves on this kind of
// machine (one proxy hop ≈ 6–7k req/s).
const benchPacedRate = 100

// BenchmarkRedisAllow64 measures Redis decisions on loopback with 64
// concurrent callers (over 16 tenant keys), each decision one EVALSHA round
// trip, and reports the decision latency's p50 and p99 (goal: p99 ≤ 1 ms).
//
// Two loads per algorithm: "paced" — each caller decides 100 times a second
// (6400/s in all, a gateway's load), where the latency is the store's; and
// "saturated" — each caller decides again as soon as it has an answer, which
// measures throughput (ns/op) and, by Little's law, mostly queueing.
// Compare with BenchmarkLocalAllow64 from the same run.
func BenchmarkRedisAllow64(b *testing.B) {
	srv := redistest.Start(b)
	for _, br := range benchRules {
		for _, paced := range []bool{true, false} {
			b.Run(br.name+"/"+loadName(paced), func(b *testing.B) {
				// A pool as large as the callers, so no caller queues for a
				// connection; the gateway's default pool (10 × GOMAXPROCS)
				// is smaller.
				s := newRedisStoreAt(b, srv.URL()+"?pool_size="+strconv.Itoa(benchCallers),
					RedisKeyPrefix("bench:"+br.name+":"+loadName(paced)+":"))
				benchAllow64(b, s, br.rule, paced)
			})
		}
	}
}

// BenchmarkLocalAllow64 is the in-process store under the same loads as
// BenchmarkRedisAllow64.
func BenchmarkLocalAllow64(b *testing.B) {
	for _, br := range benchRules {
		for _, paced := range []bool{true, false} {
			b.Run(br.name+"/"+loadName(paced), func(b *testing.B) { benchAllow64(b, NewLocal(), br.rule, paced) })
		}
	}
}

func loadName(paced bool) string {
	if paced {
		return "paced"
	}
	return "saturated"
}

func benchAllow64(b *testing.B, s Store, rule Rule, paced bool) {
	ctx := context.Background()
	// Warm up connections and the script cache.
	for i := 0; i < 16; i++ {
		if _, err := s.Allow(ctx, "tenant-"+strconv.Itoa(i)+":ai", rule, 1, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	var (
		mu     sync.Mutex
		all    []time.Duration
		failed atomic.Int64
		id     atomic.Int64
	)
	// RunParallel starts parallelism × GOMAXPROCS goroutines.
	b.SetParallelism(max(1, benchCallers/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := "tenant-" + strconv.FormatInt(id.Add(1)%16, 10) + ":ai"
		lat := make([]time.Duration, 0, 1024)
		interval := time.Second / benchPacedRate
		next := time.Now().Add(time.Duration(id.Load()) * interval / benchCallers) // stagger
		for pb.Next() {
			if paced {
				if wait := time.Until(next); wait > 0 {
					time.Sleep(wait)
				}
				next = next.Add(interval)
			}
			t0 := time.Now()
			if _, err := s.Allow(ctx, key, rule, 1, t0); err != nil {
				failed.Add(1)
			}
			lat = append(lat, time.Since(t0))
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d decisions failed", n, len(all))
	}
	b.ReportMetric(float64(percentile(all, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(all, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(id.Load()), "callers")
}
