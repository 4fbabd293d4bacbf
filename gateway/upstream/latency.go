package upstream

import (
	"math"
	"time"
)

// Latency histograms have log-spaced bins: binsPerOctave per doubling from
// histFloor, so a quantile is known within ±9 % (2^(1/8)) anywhere from
// 100 µs to about 7 minutes. Values outside fall into the first or last bin.
const (
	histFloor     = 100 * time.Microsecond
	binsPerOctave = 4
	histBins      = 22 * binsPerOctave
)

// latencyHist counts latencies per log-spaced bin.
type latencyHist struct {
	bins  [histBins]uint32
	count uint32
}

func binOf(d time.Duration) int {
	if d <= histFloor {
		return 0
	}
	b := int(math.Log2(float64(d)/float64(histFloor)) * binsPerOctave)
	return min(b, histBins-1)
}

// binValue is the geometric middle of bin b.
func binValue(b int) time.Duration {
	return time.Duration(float64(histFloor) * math.Exp2((float64(b)+0.5)/binsPerOctave))
}

func (h *latencyHist) add(d time.Duration) {
	h.bins[binOf(d)]++
	h.count++
}

func (h *latencyHist) merge(o *latencyHist) {
	for i, c := range o.bins {
		h.bins[i] += c
	}
	h.count += o.count
}

// quantile returns the q-quantile (q in (0,1]) and false when empty.
func (h *latencyHist) quantile(q float64) (time.Duration, bool) {
	if h.count == 0 {
		return 0, false
	}
	rank := uint32(math.Ceil(q * float64(h.count)))
	rank = max(rank, 1)
	var seen uint32
	for i, c := range h.bins {
		seen += c
		if seen >= rank {
			return binValue(i), true
		}
	}
	return binValue(histBins - 1), true
}

// latencyBuckets is how many sub-windows a latency window rolls over.
const latencyBuckets = 10

// latencyWindow is a rolling histogram of the latencies seen over the last
// span (see Config.LatencyWindow). Not safe for concurrent use.
type latencyWindow struct {
	ring timeRing[latencyHist]
}

func newLatencyWindow(span time.Duration, now time.Time) *latencyWindow {
	return &latencyWindow{ring: newTimeRing[latencyHist](latencyBuckets, span, now)}
}

func (w *latencyWindow) add(now time.Time, d time.Duration) { w.ring.at(now).add(d) }

// sum merges the window (rolled to now) into dst.
func (w *latencyWindow) sum(now time.Time, dst *latencyHist) {
	w.ring.roll(now)
	for i := range w.ring.buckets {
		dst.merge(&w.ring.buckets[i])
	}
}
