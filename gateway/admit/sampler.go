package admit

import (
	"context"
	"math"
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// Runtime metric names the Guard reads.
const (
	metricSched = "/sched/latencies:seconds"
	metricGC    = "/sched/pauses/total/gc:seconds"
	metricHeap  = "/gc/heap/live:bytes"
	// metricHeapObjects stands in before the first GC, when live is 0.
	metricHeapObjects = "/memory/classes/heap/objects:bytes"
)

// sampler measures the Guard's own signals: the lag probe (how late a timer
// of probeEvery fires, the method of Node's monitorEventLoopDelay) and the
// runtime's scheduler latency, GC pause and live heap, as quantiles over
// the recent window.
type sampler struct {
	probeEvery time.Duration

	mu      sync.Mutex
	lags    []float64 // guarded by mu; ring of recent probe lags, ms
	lagNext int       // guarded by mu
	scratch []float64 // guarded by mu

	// Used by sample only (one caller at a time: the evaluation loop).
	rm        []metrics.Sample
	schedHist histRing
	gcHist    histRing
}

func newSampler(window, probeEvery, evalEvery time.Duration) *sampler {
	nLags := max(int(window/probeEvery), 8)
	nSnaps := max(int(window/evalEvery), 1) + 1
	s := &sampler{
		probeEvery: probeEvery,
		lags:       make([]float64, 0, nLags),
		scratch:    make([]float64, 0, nLags),
		rm:         []metrics.Sample{{Name: metricSched}, {Name: metricGC}, {Name: metricHeap}, {Name: metricHeapObjects}},
	}
	s.schedHist.init(nSnaps)
	s.gcHist.init(nSnaps)
	return s
}

// probe records timer oversleep until ctx is done.
func (s *sampler) probe(ctx context.Context) {
	t := time.NewTimer(s.probeEvery)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			_ = now
			lag := time.Since(start) - s.probeEvery
			s.record(float64(max(lag, 0)) / 1e6)
			start = time.Now()
			t.Reset(s.probeEvery)
		}
	}
}

func (s *sampler) record(lagMs float64) {
	s.mu.Lock()
	if len(s.lags) < cap(s.lags) {
		s.lags = append(s.lags, lagMs)
	} else {
		s.lags[s.lagNext] = lagMs
		s.lagNext = (s.lagNext + 1) % len(s.lags)
	}
	s.mu.Unlock()
}

// sample returns the current internal signals and the lag p50.
func (s *sampler) sample() (Signals, float64) {
	var sig Signals
	s.mu.Lock()
	s.scratch = append(s.scratch[:0], s.lags...)
	s.mu.Unlock()
	slices.Sort(s.scratch)
	lagP50 := sortedQuantile(s.scratch, 0.5)
	sig.LagMs = sortedQuantile(s.scratch, 0.99)

	metrics.Read(s.rm)
	if h := s.rm[0]; h.Value.Kind() == metrics.KindFloat64Histogram {
		sig.SchedMs = s.schedHist.quantile(h.Value.Float64Histogram(), 0.99) * 1e3
	}
	if h := s.rm[1]; h.Value.Kind() == metrics.KindFloat64Histogram {
		sig.GCPauseMs = s.gcHist.quantile(h.Value.Float64Histogram(), 0.99) * 1e3
	}
	if v := s.rm[2]; v.Value.Kind() == metrics.KindUint64 {
		sig.HeapBytes = v.Value.Uint64()
	}
	if v := s.rm[3]; sig.HeapBytes == 0 && v.Value.Kind() == metrics.KindUint64 {
		sig.HeapBytes = v.Value.Uint64()
	}
	return sig, lagP50
}

// sortedQuantile returns the q quantile of sorted xs (nearest rank), 0
// when empty.
func sortedQuantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// histRing keeps the last snapshots of a cumulative runtime histogram so
// that quantiles cover only the recent window.
type histRing struct {
	snaps [][]uint64
	next  int
	full  bool
	delta []uint64
}

func (r *histRing) init(n int) { r.snaps = make([][]uint64, n) }

// quantile stores h's counts and returns the q quantile (seconds) of the
// observations since the oldest stored snapshot; 0 when there were none.
func (r *histRing) quantile(h *metrics.Float64Histogram, q float64) float64 {
	cur := r.snaps[r.next]
	if len(cur) != len(h.Counts) {
		cur = make([]uint64, len(h.Counts))
		r.snaps[r.next] = cur
	}
	copy(cur, h.Counts)
	// The oldest snapshot is the one after next (or index 0 before full).
	oldestIdx := (r.next + 1) % len(r.snaps)
	if !r.full {
		oldestIdx = 0
	}
	r.next = (r.next + 1) % len(r.snaps)
	if r.next == 0 {
		r.full = true
	}
	old := r.snaps[oldestIdx]
	if len(r.delta) != len(cur) {
		r.delta = make([]uint64, len(cur))
	}
	var total uint64
	for i, c := range cur {
		var o uint64
		if len(old) == len(cur) && oldestIdx != (r.next+len(r.snaps)-1)%len(r.snaps) {
			o = old[i]
		}
		r.delta[i] = c - min(o, c)
		total += r.delta[i]
	}
	if total == 0 {
		return 0
	}
	target := uint64(math.Ceil(q * float64(total)))
	var cum uint64
	for i, d := range r.delta {
		cum += d
		if cum >= target {
			hi := h.Buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = h.Buckets[i]
			}
			return math.Max(hi, 0)
		}
	}
	return 0
}
