package htmlreport

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/hdrv2"
)

// merger merges the per-tick latency histograms of an interval (HdrHistogram
// V2 encoding, as samples.jsonl stores them) and reads true percentiles of
// the merged counts. One merger is reused for every interval.
type merger struct {
	h   *hdrhistogram.Histogram
	dec hdrv2.Decoder
	bad int // histograms that did not decode
}

func newMerger() *merger {
	// The generator's geometry (lab/load): 1 µs..10 min, 3 digits. A
	// histogram of another geometry still merges, value by value.
	return &merger{h: hdrhistogram.New(1, int64(600e6), 3)}
}

// reset starts a new interval.
func (m *merger) reset() { m.h.Reset() }

// add merges one encoded histogram; "" (nothing ended in that tick) adds
// nothing.
func (m *merger) add(enc string) {
	if enc == "" {
		return
	}
	if err := m.dec.MergeInto(m.h, enc); err != nil {
		m.bad++
	}
}

// count is how many latencies the interval holds.
func (m *merger) count() int64 { return m.h.TotalCount() }

// ms is the q-th percentile (0..100) in milliseconds; NaN when the interval
// holds nothing.
func (m *merger) ms(q float64) float64 {
	if m.h.TotalCount() == 0 {
		return math.NaN()
	}
	return float64(m.h.ValueAtPercentile(q)) / 1000
}
