package load

import (
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/wire"
)

// TestWindowHistograms checks that a Window carries the histograms behind
// its percentiles, that they encode and decode to the same counts, and that
// the next window starts empty.
func TestWindowHistograms(t *testing.T) {
	s := newStats()
	start := time.Unix(1000, 0)
	for i := range 100 {
		s.offer(0, 0)
		s.finish(0, 0, sent{outcome: wire.OutcomeOK, status: 200, reached: true}, time.Duration(i+1)*time.Millisecond, false, nil) // 1..100 ms
	}
	s.offer(1, 0)
	s.finish(1, 0, sent{outcome: wire.OutcomeShedOverload, status: 503, reached: true}, 500*time.Microsecond, false, nil) // sent, shed: not admitted
	s.offer(2, 0)
	s.finish(2, 0, sent{outcome: wire.OutcomeGeneratorDropped}, 0, false, nil) // never sent: no latency anywhere

	w := s.window(start.Add(time.Second), start.Add(time.Second), start, 100, 0)
	if w.AdmittedHist == nil || w.AdmittedHist.TotalCount() != 100 {
		t.Fatalf("AdmittedHist = %v, want 100 admitted latencies", w.AdmittedHist)
	}
	if got := w.ByPriority["P1"].Latency; got == nil || got.TotalCount() != 1 {
		t.Fatalf("P1 latency hist = %v, want the one shed request", got)
	}
	if got := w.ByPriority["P2"].Latency; got != nil {
		t.Fatalf("P2 latency hist = %v, want nil (a dropped request has no latency)", got)
	}
	if got, want := float64(w.AdmittedHist.ValueAtPercentile(99))/1000, w.AdmittedP99Ms; got != want {
		t.Fatalf("hist p99 = %v ms, window p99 = %v ms", got, want)
	}
	enc, err := w.AdmittedHist.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := hdrhistogram.DecodePacked(enc)
	if err != nil {
		t.Fatal(err)
	}
	if back.TotalCount() != 100 || back.ValueAtPercentile(50) != w.AdmittedHist.ValueAtPercentile(50) {
		t.Fatalf("decoded: %d values, p50 %d; want 100, %d", back.TotalCount(), back.ValueAtPercentile(50), w.AdmittedHist.ValueAtPercentile(50))
	}

	w2 := s.window(start.Add(2*time.Second), start.Add(2*time.Second), start, 100, 0)
	if w2.AdmittedHist != nil || w2.ByPriority["P0"].Latency != nil {
		t.Fatal("an empty window carries a histogram")
	}
}
