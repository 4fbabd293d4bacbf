package htmlreport

import (
	"math"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

// memoryChart builds the page of r and returns its memory chart's series
// by key (their largest value) and its lines.
func memoryChart(t *testing.T, r *Run) (map[string]float64, []hline, string) {
	t.Helper()
	pg, err := build([]*Run{r})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pg.Charts {
		if c.ID != "memory" {
			continue
		}
		top := map[string]float64{}
		for _, s := range c.Series {
			if s.Values.points() > 0 {
				top[s.Key] = s.Values.max()
			} else {
				top[s.Key] = math.NaN()
			}
		}
		return top, c.Lines, c.Note
	}
	t.Fatal("no memory chart")
	return nil, nil, ""
}

// multiGateway is a run of gw gateways with a 256 MB pod memory limit
// each, every gateway at 150 MB RSS and 40 MB heap: together 150×gw and
// 40×gw MB. perGateway: the samples carry the largest gateway's figures
// (rss_max_bytes, heap_max_bytes), as newer runs' do.
func multiGateway(gw int, perGateway bool) *Run {
	var ss []runfiles.Sample
	for i := 1; i <= 8; i++ {
		s := runfiles.Sample{Elapsed: float64(i) * 0.25, RSSBytes: float64(gw * 150 << 20), HeapBytes: float64(gw * 40 << 20)}
		if perGateway {
			s.RSSMaxBytes, s.HeapMaxBytes = 150<<20, 40<<20
		}
		ss = append(ss, s)
	}
	r := mkRun(ss...)
	e := &experiment.Experiment{}
	e.Gateway.Count, e.Gateway.MemoryLimitMB = gw, 256
	r.Info = &runfiles.RunInfo{Experiment: e, Resolved: runfiles.Resolved{Gateways: make([]runfiles.ResolvedChild, gw)}}
	return r
}

// The pod memory limit is per gateway, so the memory chart reads it
// against the largest gateway's RSS: with 3 gateways at 150 MB each the
// RSS line is at 150 MB, under the 256 MB limit, and the 450 MB sum is a
// separate, named line. The RSS line was the sum (450 MB, over a limit
// no gateway reached) and the limit was left out for several gateways.
func TestMemoryChartReadsTheLimitPerGateway(t *testing.T) {
	top, lines, _ := memoryChart(t, multiGateway(3, true))
	if top["rss_mb"] != 150 {
		t.Errorf("RSS line tops at %v MB, want 150 (the largest gateway's)", top["rss_mb"])
	}
	if top["rss_sum_mb"] != 450 {
		t.Errorf("summed RSS line tops at %v MB, want 450", top["rss_sum_mb"])
	}
	if len(lines) != 1 || lines[0].Kind != "limit" || lines[0].Y != 256 {
		t.Errorf("lines %+v, want the 256 MB pod memory limit", lines)
	}
}

// Old samples.jsonl (no rss_max_bytes) still read: one gateway's
// rss_bytes is that gateway's RSS, drawn against its limit; several
// gateways' is only their sum, drawn as the sum, with no limit and a note.
func TestMemoryChartOlderRuns(t *testing.T) {
	top, lines, _ := memoryChart(t, multiGateway(1, false))
	if top["rss_mb"] != 150 || len(lines) != 1 || lines[0].Y != 256 {
		t.Errorf("one gateway, old samples: RSS %v MB, lines %+v; want 150 against the 256 MB limit", top["rss_mb"], lines)
	}
	if _, ok := top["rss_sum_mb"]; ok {
		t.Errorf("one gateway: a summed RSS line %v", top)
	}
	top, lines, note := memoryChart(t, multiGateway(5, false))
	if v, ok := top["rss_mb"]; (ok && !math.IsNaN(v)) || top["rss_sum_mb"] != 750 {
		t.Errorf("five gateways, old samples: RSS %v, sum %v; want no per-gateway line and the 750 MB sum", top["rss_mb"], top["rss_sum_mb"])
	}
	if len(lines) != 0 || !strings.Contains(note, "only the gateways' sum is known") {
		t.Errorf("five gateways, old samples: lines %+v, note %q; want no limit and a note", lines, note)
	}
}

// The heap is one gateway's too, as RSS: with 3 gateways of 40 MB each
// the heap line is at 40 MB, the heap a gateway's guard reads, not the
// 120 MB sum; the summary's max_heap_bytes is likewise one gateway's.
// Old samples (no heap_max_bytes) of several gateways draw their sum,
// named so, with a note; one gateway's heap_bytes is that gateway's.
func TestMemoryChartHeapPerGateway(t *testing.T) {
	top, _, _ := memoryChart(t, multiGateway(3, true))
	if top["heap_mb"] != 40 {
		t.Errorf("heap line tops at %v MB, want 40 (the largest gateway's)", top["heap_mb"])
	}
	if _, ok := top["heap_sum_mb"]; ok {
		t.Errorf("a summed heap line beside the per-gateway one: %v", top)
	}
	top, _, note := memoryChart(t, multiGateway(3, false))
	if v, ok := top["heap_mb"]; (ok && !math.IsNaN(v)) || top["heap_sum_mb"] != 120 {
		t.Errorf("three gateways, old samples: heap %v, sum %v; want no per-gateway line and the 120 MB sum", top["heap_mb"], top["heap_sum_mb"])
	}
	if !strings.Contains(note, "heap line is the gateways' sum") {
		t.Errorf("three gateways, old samples: note %q does not say the heap is a sum", note)
	}
	if top, _, _ := memoryChart(t, multiGateway(1, false)); top["heap_mb"] != 40 {
		t.Errorf("one gateway, old samples: heap %v, want its 40 MB", top["heap_mb"])
	}
}

// chartNote is the note of chart id on the page of runs.
func chartNote(t *testing.T, id string, runs ...*Run) string {
	t.Helper()
	pg, err := build(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pg.Charts {
		if c.ID == id {
			return c.Note
		}
	}
	t.Fatalf("no %s chart", id)
	return ""
}

// The sampler sums the gateways' queue, in-flight, concurrency limit and
// goroutines, so the charts of a run of several gateways say so: an A/B
// of four gateways (limit 4 × 48 = 192) against one (48) read as one
// limit quadrupled, with nothing on the page saying it was a sum.
func TestSummedGatewayGaugesSaySo(t *testing.T) {
	for _, id := range []string{"queue", "goroutines"} {
		note := chartNote(t, id, multiGateway(4, true), multiGateway(1, true))
		if !strings.Contains(note, "run A: ") || !strings.Contains(note, "summed over its 4 gateways") {
			t.Errorf("%s chart, 4 gateways beside 1: note %q does not say run A's lines are its 4 gateways' sum", id, note)
		}
		if strings.Contains(note, "run B") {
			t.Errorf("%s chart: note %q speaks of run B, which had one gateway", id, note)
		}
		if note := chartNote(t, id, multiGateway(1, true)); strings.Contains(note, "summed") {
			t.Errorf("%s chart, one gateway: note %q", id, note)
		}
	}
}

// The key figures of a run of several gateways say whose they are: its
// max RSS of 150 MB is one gateway's of three (450 MB together), beside a
// one-gateway run's; a run recorded before the largest gateway's was kept
// has the sum. The table said "gateway max RSS" alone for all of them.
func TestKeyFiguresSayWhichGateway(t *testing.T) {
	pg, err := build([]*Run{multiGateway(3, true), multiGateway(1, true), multiGateway(4, false)})
	if err != nil {
		t.Fatal(err)
	}
	note := pg.Figures.Note
	for _, want := range []string{
		"run A: several gateways; gateway lag and sched latency p99 are the worst gateway's, max RSS and heap the largest gateway's",
		"run C: several gateways; gateway lag and sched latency p99 are the worst gateway's, max RSS and heap the gateways' sum",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("key figures note %q\nlacks %q", note, want)
		}
	}
	if strings.Contains(note, "run B") {
		t.Errorf("key figures note %q speaks of run B, which had one gateway", note)
	}
	// Said once for the runs it applies to.
	if pg, err := build([]*Run{multiGateway(3, true), multiGateway(2, true)}); err != nil || !strings.HasPrefix(pg.Figures.Note, "runs A, B: several gateways;") || strings.Contains(pg.Figures.Note, " · ") {
		t.Errorf("two runs of several gateways: note %q (%v), want one remark for runs A, B", pg.Figures.Note, err)
	}
	if pg, err := build([]*Run{multiGateway(1, true)}); err != nil || pg.Figures.Note != "" {
		t.Errorf("one gateway: note %q (%v), want none", pg.Figures.Note, err)
	}
}
