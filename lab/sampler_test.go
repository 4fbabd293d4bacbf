package lab

import (
	"math"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func TestServiceWindow(t *testing.T) {
	var w serviceWindow
	if _, ok := w.mean(); ok {
		t.Fatal("an empty window has a mean")
	}
	w.add(4.9, 49) // 0.1 s each, but too few to trust
	if _, ok := w.mean(); ok {
		t.Fatal("49 observations gave a mean")
	}
	w.add(15.1, 1) // one long stream
	m, ok := w.mean()
	if !ok || math.Abs(m-0.4) > 1e-9 {
		t.Fatalf("mean = %v, %v; want 0.4 (20 s over 50 requests)", m, ok)
	}
	// The ring forgets the oldest scrapes: after a full turn of quiet
	// scrapes nothing is left.
	for range len(w.sum) {
		w.add(0, 0)
	}
	if _, ok := w.mean(); ok {
		t.Fatal("a window of empty scrapes has a mean")
	}
	// A full turn of steady scrapes gives their mean.
	for range len(w.sum) {
		w.add(2.2, 10)
	}
	if m, ok := w.mean(); !ok || math.Abs(m-0.22) > 1e-9 {
		t.Fatalf("steady mean = %v, %v; want 0.22", m, ok)
	}
}

// BenchmarkEncodeHist is the sampler's cost of one tick's histogram in
// samples.jsonl (HdrHistogram V2 compressed): 500 latencies between 0.1
// and 2 s. The sampler encodes four per tick (admitted, P0, P1, P2).
func BenchmarkEncodeHist(b *testing.B) {
	h := hdrhistogram.New(1, 600e6, 3)
	for i := range 500 {
		_ = h.RecordValue(int64(100e3 * math.Pow(20, float64(i)/500)))
	}
	p := hdrhistogram.NewPacked(1, 600e6, 3)
	p.MergeFrom(h)
	b.ReportAllocs()
	var n int
	s := &sampler{}
	for b.Loop() {
		n = len(s.encodeHist(p))
	}
	b.ReportMetric(float64(n), "bytes/hist")
}
