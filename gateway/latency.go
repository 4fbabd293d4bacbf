package gateway

import (
	"sync"
	"sync/atomic"
	"time"
)

// latencyTracker turns upstream call latencies into the guard's
// upstream_latency_ratio: the mean latency since the last evaluation over
// a baseline. The baseline follows the lowest recent mean: it drops at
// once to a lower mean and creeps up (0.05 % per evaluation, about 0.5 %/s
// at 100 ms) so a lasting change becomes the new normal only slowly.
type latencyTracker struct {
	sumNs atomic.Int64
	n     atomic.Int64

	mu       sync.Mutex
	baseline float64 // guarded by mu; ns, 0 until the first window
	last     float64 // guarded by mu; last ratio
}

// minLatencySamples below which a window keeps the previous ratio.
const minLatencySamples = 4

// minLatencyBaseline floors the baseline: below it, latency differences
// are scheduling noise (a loopback backend answering in 100 µs would
// otherwise read 10× on the first hiccup), not a slower model.
const minLatencyBaseline = float64(10 * time.Millisecond)

// observe records one upstream call (time to response headers, or the
// time spent before the call failed on the deadline).
func (t *latencyTracker) observe(d time.Duration) {
	t.sumNs.Add(int64(d))
	t.n.Add(1)
}

// ratio closes the current window and returns mean/baseline, the
// baseline floored at minLatencyBaseline (1 when there is no signal: no
// traffic and nothing in flight).
func (t *latencyTracker) ratio(inflight int64) float64 {
	n := t.n.Swap(0)
	sum := t.sumNs.Swap(0)
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < minLatencySamples {
		if n > 0 { // too few to judge: keep them for the next window
			t.n.Add(n)
			t.sumNs.Add(sum)
		}
		if inflight == 0 {
			t.last = 1
		}
		if t.last == 0 {
			return 1
		}
		return t.last
	}
	mean := float64(sum) / float64(n)
	switch {
	case t.baseline == 0 || mean < t.baseline:
		t.baseline = mean
	default:
		t.baseline *= 1.0005
	}
	t.last = mean / max(t.baseline, minLatencyBaseline)
	return t.last
}
