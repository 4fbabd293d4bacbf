package ratelimit

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// benchLoads are the per-caller decision rates of the sub-benchmarks, with
// 64 callers: "paced" 64 × 100 = 6400 decisions/s, about what one gateway
// process serves on this kind of machine (one proxy hop ≈ 6–7k req/s);
// "light" 640/s, a lab's gateway at its usual rates; "saturated" (0): each
// caller decides again as soon as it has an answer, which measures
// throughput (ns/op) and, by Little's law, mostly queueing.
var benchLoads = []struct {
	name string
	rate float64 // per caller per second; 0: saturated
}{{"light", 10}, {"paced", 100}, {"saturated", 0}}

// BenchmarkRedisAllow64 measures decisions through each kind of shared
// store on loopback — redis-server, the embedded server (`levee redis`, its
// own process) and a Redis Cluster of three masters — with 64 concurrent
// callers (over 16 tenant keys), each decision one EVALSHA round trip, and
// reports the decision latency's p50 and p99 (goal for redis-server: p99
// ≤ 1 ms). Run it time-based (-benchtime 1s or more): the percentiles need
// thousands of decisions. Compare with BenchmarkLocalAllow64 from the same
// run.
func BenchmarkRedisAllow64(b *testing.B) {
	for _, kb := range backends {
		b.Run(kb.name, func(b *testing.B) {
			url := kb.start(b)
			for _, br := range benchRules {
				for _, load := range benchLoads {
					b.Run(br.name+"/"+load.name, func(b *testing.B) {
						// A pool as large as the callers, so no caller queues for a
						// connection; the gateway's default pool (10 × GOMAXPROCS)
						// is smaller.
						s := newRedisStoreAt(b, url+poolParam(url),
							RedisKeyPrefix(fmt.Sprintf("bench:%s:%s:%d:", br.name, load.name, time.Now().UnixNano())))
						benchAllow64(b, s, br.rule, load.rate)
					})
				}
			}
		})
	}
}

// poolParam is the pool_size URL parameter for benchCallers, after ? or &.
func poolParam(url string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return sep + "pool_size=" + strconv.Itoa(benchCallers)
}

// BenchmarkLocalAllow64 is the in-process store under the same loads as
// BenchmarkRedisAllow64.
func BenchmarkLocalAllow64(b *testing.B) {
	for _, br := range benchRules {
		for _, load := range benchLoads {
			b.Run(br.name+"/"+load.name, func(b *testing.B) { benchAllow64(b, NewLocal(), br.rule, load.rate) })
		}
	}
}

func benchAllow64(b *testing.B, s Store, rule Rule, rate float64) {
	paced := rate > 0
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
		interval := time.Second
		if paced {
			interval = time.Duration(float64(time.Second) / rate)
		}
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
