package htmlreport

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// Narration and OOM marks stay on the time axis: an event after the run's
// last sample (written while requests drained) or before its start is
// drawn at the axis's end or start. They were drawn where they fell, right
// of the plot and over the next chart.
func TestMarksClampedToTheTimeAxis(t *testing.T) {
	ev := func(x float64, kind, detail string, f map[string]any) runfiles.Event {
		return runfiles.Event{Time: t0.Add(seconds(x)), Kind: kind, Detail: detail, Fields: f}
	}
	var ss []runfiles.Sample
	for i := 1; i <= 80; i++ {
		ss = append(ss, runfiles.Sample{Elapsed: float64(i) * 0.25, RSSBytes: 50 << 20, HeapBytes: 20 << 20})
	}
	r := mkRun(ss...) // ends at 20 s
	r.Events = []runfiles.Event{
		ev(-3, runfiles.EventNarration, "before", map[string]any{"step": 1.0, "kind": "predict"}),
		ev(26, runfiles.EventNarration, "after", map[string]any{"step": 2.0, "kind": "explain"}),
		ev(31, runfiles.EventOOMKill, "gateway-0", nil),
	}
	v := newRunView(0, r, newTimeline(r), frame{})
	if len(v.Narration) != 2 || v.Narration[0].X != 0 || v.Narration[1].X != 20 {
		t.Errorf("narration marks %+v, want at 0 and 20", v.Narration)
	}
	if len(v.OOMKills) != 1 || v.OOMKills[0] != 20 {
		t.Errorf("OOM kills %v, want [20]", v.OOMKills)
	}

	var b strings.Builder
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	svgs := regexp.MustCompile(`(?s)<svg class="[^"]*" data-chart="\d+" viewBox="0 0 ([0-9.]+) [0-9.]+".*?</svg>`).FindAllStringSubmatch(page, -1)
	mark := regexp.MustCompile(`<g class="(narration|oom) run-0"><title>[^<]*</title><line x1="([-0-9.]+)"`)
	oom := 0
	for _, s := range svgs {
		w, _ := strconv.ParseFloat(s[1], 64)
		for _, m := range mark.FindAllStringSubmatch(s[0], -1) {
			x, _ := strconv.ParseFloat(m[2], 64)
			if x < padL || x > w-padR {
				t.Errorf("a %s mark at x=%v, outside the plot [%d, %v]", m[1], x, padL, w-padR)
			}
			if m[1] == "oom" {
				oom++
			}
		}
	}
	if len(svgs) == 0 || oom == 0 {
		t.Fatalf("%d charts, %d OOM marks drawn: the page changed shape", len(svgs), oom)
	}
}

// A value near the largest float64 in samples.jsonl (a corrupt line, or a
// gauge that ran away) still gives a page: the axis top stays finite and
// the chart says its peaks are cut. Rounding the top up overflowed to
// +Inf, and the page failed to write ("json: unsupported value: +Inf").
func TestHugeValueStillWritesThePage(t *testing.T) {
	dir := t.TempDir()
	rd := filepath.Join(dir, "huge")
	if err := os.MkdirAll(rd, 0o755); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 1; i <= 40; i++ {
		s := runfiles.Sample{Time: t0.Add(seconds(float64(i) * 0.25)), Elapsed: float64(i) * 0.25,
			OfferedRPS: 100, GoodputRPS: 90, LagProbeP99Ms: 3, Inflight: 10, CapacityRPS: 100, RetryRPS: 1}
		if i == 20 {
			s.LagProbeP99Ms, s.Inflight, s.CapacityRPS, s.RetryRPS, s.AdmittedP99Ms = math.MaxFloat64, math.MaxFloat64, math.MaxFloat64, math.MaxFloat64, math.MaxFloat64
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if !strings.Contains(strings.Join(lines, ""), "1.7976931348623157e+308") {
		t.Fatal("the largest float64 is not in samples.jsonl")
	}
	if err := os.WriteFile(filepath.Join(rd, "samples.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(rd)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Write(&b, r); err != nil {
		t.Fatalf("Write: %v", err)
	}
	pg, err := build([]*Run{r})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pg.Charts {
		if math.IsInf(c.YMax, 0) || math.IsNaN(c.YMax) || c.YMax <= 0 {
			t.Errorf("chart %s: y max %v", c.ID, c.YMax)
		}
	}
}
