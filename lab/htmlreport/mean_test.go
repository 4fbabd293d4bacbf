package htmlreport

import (
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/runfiles"
)

// A gauge that holds one value over an interval is drawn at that value:
// ten nodes up in both ticks of a 0.5 s interval are 10, not the
// 10.000000000000002 that the time-weighted sum of these two ticks' weights
// rounds to. That was over the nodes chart's top (the node count, 10), so
// the chart said "brief peaks up to 10 are cut at the top" on every A/B or
// long run of ten nodes.
func TestMeanOfAConstantIsThatConstant(t *testing.T) {
	nodes := make([]runfiles.NodeSample, 10)
	for i := range nodes {
		nodes[i] = runfiles.NodeSample{Index: i, Up: true, Slots: 4}
	}
	// Tick times (ns after the start) whose weights make the rounding.
	var ss []runfiles.Sample
	for _, ns := range []int64{242847831, 494962909} {
		ss = append(ss, runfiles.Sample{Time: t0.Add(time.Duration(ns)), Elapsed: float64(ns) / 1e9, Nodes: nodes, OfferedTotal: 10})
	}
	r := mkRun(ss...)
	f := computeFrame(r, newTimeline(r), 0.5)
	if got := f.series["nodes_up"]; len(got) != 1 || got[0] != 10 {
		t.Errorf("nodes up %v, want exactly 10", got)
	}
	if got := f.series["live_slots"]; len(got) != 1 || got[0] != 40 {
		t.Errorf("live slots %v, want exactly 40", got)
	}
	pg, err := build([]*Run{r})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pg.Charts {
		if c.ID == "nodes" && strings.Contains(c.Note, "cut at the top") {
			t.Errorf("nodes chart: %q, with every value at its top (%v)", c.Note, c.YMax)
		}
	}
}
