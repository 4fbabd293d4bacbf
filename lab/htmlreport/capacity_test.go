package htmlreport

import (
	"math"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// TestCapacityDrawnOnlyWhereMeasured: the throughput chart's capacity is
// a measurement, never the nodes' configured service time standing in
// for one. Ticks whose capacity was partly configured (the sampler's
// capacity_configured_rps: too few requests finished on a node to measure
// it) are a gap, and the chart's note says why; measured ticks are drawn
// as they read. A run without such ticks has no such note.
func TestCapacityDrawnOnlyWhereMeasured(t *testing.T) {
	var ss []runfiles.Sample
	for i := 1; i <= 8; i++ {
		s := runfiles.Sample{Elapsed: float64(i) * 0.5, CapacityRPS: 40, OfferedRPS: 30}
		if i <= 4 { // the first 2 s: configured 20 req/s per node, 2 nodes
			s.CapacityRPS, s.CapacityConfiguredRPS = 40, 40
		}
		if i > 4 {
			s.CapacityRPS = 31
		}
		ss = append(ss, s)
	}
	capacity := func(r *Run) (values, string) {
		t.Helper()
		pg, err := build([]*Run{r})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pg.Charts {
			if c.ID != "throughput" {
				continue
			}
			for _, s := range c.Series {
				if s.Key == "capacity" {
					return s.Values, c.Note
				}
			}
		}
		t.Fatal("no capacity series")
		return nil, ""
	}
	v, note := capacity(mkRun(ss...))
	if v.points() == 0 || v.max() != 31 {
		t.Errorf("capacity drawn up to %v over %d points; want the measured 31 alone", v.max(), v.points())
	}
	for i, x := range v {
		if !math.IsNaN(x) && x != 31 {
			t.Errorf("interval %d: capacity %v, want a gap or the measured 31", i, x)
		}
	}
	if !strings.Contains(note, "too few requests finished") {
		t.Errorf("the chart's note does not say why capacity has a gap: %q", note)
	}
	for i := range ss {
		ss[i].CapacityConfiguredRPS = 0
	}
	v, note = capacity(mkRun(ss...))
	if v.max() != 40 || strings.Contains(note, "too few requests finished") {
		t.Errorf("all measured: capacity max %v, note %q; want 40 and no gap note", v.max(), note)
	}
}

// TestCaveatSaidOnce: a caveat that holds for several runs is said once,
// naming them all, not once per run (three runs with configured capacity
// ticks made the throughput note three copies of the same sentence).
func TestCaveatSaidOnce(t *testing.T) {
	var ss []runfiles.Sample
	for i := 1; i <= 8; i++ {
		ss = append(ss, runfiles.Sample{Elapsed: float64(i) * 0.5, CapacityRPS: 40, CapacityConfiguredRPS: 40, OfferedRPS: 30})
	}
	pg, err := build([]*Run{mkRun(ss...), mkRun(ss...), mkRun(ss...)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pg.Charts {
		if c.ID != "throughput" {
			continue
		}
		if n := strings.Count(c.Note, "too few requests finished"); n != 1 || !strings.Contains(c.Note, "runs A, B, C: the capacity is a gap") {
			t.Errorf("the capacity caveat is said %d times, want once for runs A, B, C: %q", n, c.Note)
		}
		return
	}
	t.Fatal("no throughput chart")
}
