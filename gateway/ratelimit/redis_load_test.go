package ratelimit

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadResult is what drive saw, over every store.
type loadResult struct {
	offered, admitted, errors atomic.Int64
	perStore                  []atomic.Int64 // admitted per store
	// first and last are the unix ns of the first decision's start and of
	// the last decision's end: the span the store's clock can have seen.
	first, last atomic.Int64

	mu         sync.Mutex
	latencies  []time.Duration // every decision's latency; guarded by mu
	admittedAt []int64         // unix ns at which each admitted decision returned; guarded by mu
	firstErr   error           // guarded by mu
}

// admittedIn counts the decisions admitted (returned) in [from, to).
func (r *loadResult) admittedIn(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, at := range r.admittedAt {
		if at >= from.UnixNano() && at < to.UnixNano() {
			n++
		}
	}
	return n
}

// drive offers load to every store for d: workers goroutines per store, each
// paced at rate decisions per second (open loop: a worker that falls behind
// does not catch up in a burst). Every decision is timed.
func drive(t *testing.T, stores []Store, key string, rule Rule, d time.Duration, workers int, rate float64) *loadResult {
	t.Helper()
	res := &loadResult{perStore: make([]atomic.Int64, len(stores))}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for si, s := range stores {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lat := make([]time.Duration, 0, int(d.Seconds()*rate)+8)
				var admittedAt []int64
				// Stagger workers so they do not all fire at once.
				next := start.Add(time.Duration(int64(interval) * int64(si*workers+w) / int64(len(stores)*workers)))
				for {
					now := time.Now()
					if !now.Before(end) {
						break
					}
					if wait := next.Sub(now); wait > 0 {
						time.Sleep(wait)
						if !time.Now().Before(end) {
							break
						}
					}
					next = next.Add(interval)
					if behind := time.Now().Sub(next); behind > interval {
						next = time.Now() // shed the backlog instead of bursting
					}
					t0 := time.Now()
					res.first.CompareAndSwap(0, t0.UnixNano())
					dec, err := s.Allow(context.Background(), key, rule, 1, t0)
					t1 := time.Now()
					lat = append(lat, t1.Sub(t0))
					for l := res.last.Load(); l < t1.UnixNano() && !res.last.CompareAndSwap(l, t1.UnixNano()); l = res.last.Load() {
					}
					res.offered.Add(1)
					switch {
					case err != nil:
						res.errors.Add(1)
						res.mu.Lock()
						if res.firstErr == nil {
							res.firstErr = err
						}
						res.mu.Unlock()
					case dec.Allowed:
						res.admitted.Add(1)
						res.perStore[si].Add(1)
						admittedAt = append(admittedAt, t1.UnixNano())
					}
				}
				res.mu.Lock()
				res.latencies = append(res.latencies, lat...)
				res.admittedAt = append(res.admittedAt, admittedAt...)
				res.mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return res
}

// span is the time from the first decision's start to the last one's end.
func (r *loadResult) span() time.Duration {
	return time.Duration(r.last.Load() - r.first.Load())
}

// percentile returns the q-quantile (0..1) of ds by the nearest-rank method.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.9, 9}, {0.99, 10}, {0, 1}, {1, 10}} {
		if got := percentile(ds, tt.q); got != tt.want {
			t.Errorf("percentile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}
