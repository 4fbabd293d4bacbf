package htmlreport

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
)

// encodeMs encodes latencies (ms) as the sampler does.
func encodeMs(t *testing.T, ms ...float64) string {
	t.Helper()
	h := hdrhistogram.New(1, 600e6, 3)
	for _, v := range ms {
		if err := h.RecordValue(int64(v * 1000)); err != nil {
			t.Fatal(err)
		}
	}
	p := hdrhistogram.NewPacked(1, 600e6, 3)
	p.MergeFrom(h)
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// mkRun builds a headless run from samples given as (seconds, mutate).
func mkRun(samples ...runfiles.Sample) *Run {
	for i := range samples {
		if samples[i].Time.IsZero() {
			samples[i].Time = t0.Add(seconds(samples[i].Elapsed))
		}
	}
	return &Run{Dir: "x", Summary: &runfiles.Summary{Started: t0}, Samples: samples}
}

// TestPercentilesAreMerged: one interval of two ticks. Tick 1: 100
// requests at 10 ms; tick 2: 98 at 10 ms and 2 at 1 s. The ticks' own p99
// are 10 ms and 1 s; their average would be 505 ms; the interval's 200
// requests have a p99 of 10 ms (2 slow ones are 1 %).
func TestPercentilesAreMerged(t *testing.T) {
	s1 := runfiles.Sample{Elapsed: 0.25, AdmittedHist: encodeMs(t, repeat(10, 100)...)}
	s1.ByPriority = map[string]runfiles.PrioritySample{"P0": {Hist: encodeMs(t, repeat(10, 100)...)}}
	slow := append(repeat(10, 98), 1000, 1000)
	s2 := runfiles.Sample{Elapsed: 0.5, AdmittedHist: encodeMs(t, slow...)}
	s2.ByPriority = map[string]runfiles.PrioritySample{"P0": {Hist: encodeMs(t, slow...)}}
	r := mkRun(s1, s2)
	tl := newTimeline(r)

	f := computeFrame(r, tl, 0.5)
	if len(f.x) != 1 {
		t.Fatalf("%d intervals, want 1", len(f.x))
	}
	for _, key := range []string{"latency.admitted_p99", "latency.p0_p99"} {
		if got := f.series[key][0]; math.Abs(got-10) > 0.02 {
			t.Errorf("%s = %v ms, want 10 ms (merged); the average of the ticks' p99 would be 505", key, got)
		}
	}
	// Per tick, the second tick's p99 is the slow requests.
	f = computeFrame(r, tl, 0.25)
	if got := f.series["latency.admitted_p99"]; len(got) != 2 || math.Abs(got[1]-1000) > 1 {
		t.Errorf("per-tick p99 = %v, want [10 1000]", got)
	}
	// p50 of the merged interval.
	if got := computeFrame(r, tl, 0.5).series["latency.admitted_p50"][0]; math.Abs(got-10) > 0.02 {
		t.Errorf("p50 = %v, want 10", got)
	}
}

// TestRatesFromCounters: irregular ticks (a stalled sampler) still give
// exact rates over each interval, from the cumulative counters.
func TestRatesFromCounters(t *testing.T) {
	mk := func(x float64, offered, ok, timeout uint64) runfiles.Sample {
		return runfiles.Sample{Elapsed: x, OfferedTotal: offered, OfferedRPS: 12345, // the per-tick rate is not used
			OutcomeTotal: map[string]uint64{wire.OutcomeOK.String(): ok, wire.OutcomeTimeout.String(): timeout}}
	}
	r := mkRun(mk(0.25, 25, 20, 0), mk(0.5, 50, 40, 0), mk(1.75, 300, 60, 100), mk(2, 325, 80, 100))
	f := computeFrame(r, newTimeline(r), 1)
	if len(f.x) != 2 {
		t.Fatalf("x = %v, want 2 intervals (1 s, 2 s)", f.x)
	}
	// Interval 1 (0, 1]: samples at 0.25 and 0.5 → 50 offered over 0.5 s.
	// Interval 2 (1, 2]: samples at 1.75 and 2 → 275 offered over 1.5 s.
	check := func(key string, w ...float64) {
		t.Helper()
		for i, v := range w {
			if math.Abs(f.series[key][i]-v) > 1e-9 {
				t.Errorf("%s[%d] = %v, want %v", key, i, f.series[key][i], v)
			}
		}
	}
	check("offered", 100, 275/1.5)
	check("goodput", 80, 40/1.5)
	check("admitted", 80, 140/1.5)
	check("failed.timeout", 0, 100/1.5)
}

// TestSuccessPerInterval: ok / finished of the interval, a gap when nothing
// finished.
func TestSuccessPerInterval(t *testing.T) {
	mk := func(x float64, ok, fin uint64) runfiles.Sample {
		return runfiles.Sample{Elapsed: x, ByPriority: map[string]runfiles.PrioritySample{"P0": {OKTotal: ok, FinishedTotal: fin, OfferedTotal: fin}}}
	}
	r := mkRun(mk(1, 9, 10), mk(2, 9, 10), mk(3, 19, 30))
	f := computeFrame(r, newTimeline(r), 1)
	got := f.series["success.P0"]
	if got[0] != 90 || !math.IsNaN(got[1]) || got[2] != 50 {
		t.Errorf("success = %v, want [90 gap 50]", got)
	}
}

// TestStaleGatewayIsGap: gateway values of ticks without a current scrape
// are gaps, never zeros.
func TestStaleGatewayIsGap(t *testing.T) {
	r := mkRun(
		runfiles.Sample{Elapsed: 1, LagProbeP99Ms: 5, Inflight: 10, HeapBytes: 1 << 20, HeapMaxBytes: 1 << 20},
		runfiles.Sample{Elapsed: 2, GatewayStale: true},
		runfiles.Sample{Elapsed: 3, LagProbeP99Ms: 7, Inflight: 30, HeapBytes: 2 << 20, HeapMaxBytes: 2 << 20},
	)
	f := computeFrame(r, newTimeline(r), 1)
	for _, key := range []string{"lag_probe_p99", "inflight", "heap_mb"} {
		v := f.series[key]
		if math.IsNaN(v[0]) || !math.IsNaN(v[1]) || math.IsNaN(v[2]) {
			t.Errorf("%s = %v, want a gap in the middle only", key, v)
		}
	}
	// Over one 3 s interval: the largest lag, the mean in-flight of the
	// scraped ticks.
	f = computeFrame(r, newTimeline(r), 3)
	if lag, in := f.series["lag_probe_p99"][0], f.series["inflight"][0]; lag != 7 || in != 20 {
		t.Errorf("lag %v, inflight %v; want 7 (max) and 20 (mean of scraped ticks)", lag, in)
	}
}

func TestChooseInterval(t *testing.T) {
	for _, c := range []struct{ span, tick, want float64 }{
		{20, 0.25, 0.25},
		{60, 0.25, 0.25},
		{150, 0.25, 0.25},
		{151, 0.25, 0.5},
		{1800, 0.25, 5},
		{1800, 0.1, 5},
		{20, 0.33, 0.5}, // a stalled sampler: never finer than the ticks
		// A 250 ms tick measured a little over 250 ms (the reference
		// 04-node-loss reads 0.250029 s) is still a 250 ms tick.
		{60.76, 0.250029, 0.25},
		{150, 0.2501, 0.25},
		{20, 0.26, 0.5},
		{86400, 0.25, 300},
	} {
		if got := chooseInterval(c.span, c.tick); got != c.want {
			t.Errorf("chooseInterval(%v, %v) = %v, want %v", c.span, c.tick, got, c.want)
		}
	}
}

// TestReferenceIntervalIsTheTick: the recorded runs of experiments/reference
// last at most 150 s and are plotted at their 250 ms tick, as the README
// says, whether their median sample spacing reads a little over or under
// 250 ms (04-node-loss: 0.250029 s, 03-priority-shedding: 0.249988 s).
func TestReferenceIntervalIsTheTick(t *testing.T) {
	for _, name := range []string{"03-priority-shedding", "04-node-loss", "07-llm-limit", "11-big-queue"} {
		r, err := Load(filepath.Join("../../experiments/reference", name))
		if err != nil {
			t.Fatal(err)
		}
		pg, err := build([]*Run{r})
		if err != nil {
			t.Fatal(err)
		}
		if pg.Interval != 0.25 {
			t.Errorf("%s (%.1f s, median tick %.6f s): one point every %v s, want 0.25", name, pg.XMax, newTimeline(r).tick, pg.Interval)
		}
	}
}

// TestRecordingBaseline: a dashboard recording starts while the lab runs;
// its first sample only sets the counters' baseline.
func TestRecordingBaseline(t *testing.T) {
	start := t0.Add(100 * time.Second) // recording started 100 s into the lab
	s := func(at float64, offered uint64) runfiles.Sample {
		return runfiles.Sample{Time: start.Add(seconds(at)), Elapsed: 100 + at, OfferedTotal: offered}
	}
	r := &Run{Dir: "rec", Summary: &runfiles.Summary{Started: start}, Samples: []runfiles.Sample{s(0.25, 10000), s(0.5, 10050), s(0.75, 10100)}}
	tl := newTimeline(r)
	if tl.zeroBase {
		t.Fatal("a recording's counters were taken as starting from zero")
	}
	f := computeFrame(r, tl, 0.25)
	if got := f.series["offered"]; !math.IsNaN(got[0]) || got[1] != 200 || got[2] != 200 {
		t.Errorf("offered = %v, want [gap 200 200]", got)
	}
}

func TestBands(t *testing.T) {
	ev := func(x float64, kind, detail string, f map[string]any) runfiles.Event {
		return runfiles.Event{Time: t0.Add(seconds(x)), Kind: kind, Detail: detail, Fields: f}
	}
	r := mkRun(runfiles.Sample{Elapsed: 10}, runfiles.Sample{Elapsed: 20})
	r.Events = []runfiles.Event{
		ev(-1, runfiles.EventChildStart, "gateway-0", nil),
		ev(2, runfiles.EventFaultApply, "node_kill #1", map[string]any{"fault": "node_kill", "detail": "#1"}),
		ev(4, runfiles.EventFaultApply, "gc_pressure", map[string]any{"fault": "gc_pressure", "detail": ""}),
		ev(5, runfiles.EventFaultRevert, "node_kill", map[string]any{"fault": "node_kill", "detail": ""}),
		ev(6, runfiles.EventOOMKill, "gateway-0", nil),
		ev(9, runfiles.EventChildStart, "gateway-0", nil),
		ev(7, runfiles.EventNarration, "Watch this", map[string]any{"step": 2.0, "kind": "watch"}),
	}
	v := newRunView(0, r, newTimeline(r), frame{})
	want := []band{
		{Kind: "fault", Name: "node_kill", Detail: "#1", From: 2, To: 5},
		{Kind: "fault", Name: "gc_pressure", From: 4, To: 20, Open: true},
		{Kind: "down", Name: "gateway-0", Detail: "OOM-killed, restarting", From: 6, To: 9},
	}
	if len(v.Bands) != len(want) {
		t.Fatalf("bands = %+v, want %+v", v.Bands, want)
	}
	for i := range want {
		if v.Bands[i] != want[i] {
			t.Errorf("band %d = %+v, want %+v", i, v.Bands[i], want[i])
		}
	}
	if len(v.Narration) != 1 || v.Narration[0] != (mark{X: 7, Step: 2, Kind: "watch", Text: "Watch this"}) {
		t.Errorf("narration = %+v", v.Narration)
	}
	if len(v.OOMKills) != 1 || v.OOMKills[0] != 6 {
		t.Errorf("OOM kills = %v, want [6]", v.OOMKills)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	summaryOnly := filepath.Join(dir, "summary-only")
	bad := filepath.Join(dir, "bad")
	for _, d := range []string{summaryOnly, bad} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "summary.json"), []byte(`{"name":"x","started":"2026-01-01T00:00:00Z","outcomes":{},"by_priority":{}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bad, "samples.jsonl"), []byte("{\"elapsed_s\":1}\nnot json\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "no such file"},
		{file, "not a folder"},
		{summaryOnly, "no samples.jsonl: nothing to draw"},
		{bad, "samples.jsonl: line 2"},
	} {
		_, err := Load(c.dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s) = %v, want an error with %q", c.dir, err, c.want)
		}
	}
}

func TestWriteRejects(t *testing.T) {
	if err := Write(&strings.Builder{}); err == nil {
		t.Error("Write with no runs: no error")
	}
	r := mkRun(runfiles.Sample{Elapsed: 1})
	if err := Write(&strings.Builder{}, r, r, r, r, r); err == nil || !strings.Contains(err.Error(), "at most 4") {
		t.Errorf("Write with 5 runs = %v, want an error naming the limit", err)
	}
	if err := Write(&strings.Builder{}, &Run{Dir: "empty"}); err == nil {
		t.Error("Write of a run without samples: no error")
	}
}

// TestRedisChart: the Redis fallback chart is drawn only when a run had
// Redis in play.
func TestRedisChart(t *testing.T) {
	has := func(pg *page) bool {
		for _, c := range pg.Charts {
			if c.ID == "redis" {
				return true
			}
		}
		return false
	}
	r := mkRun(runfiles.Sample{Elapsed: 1, RedisFallbackRPS: 0}, runfiles.Sample{Elapsed: 2})
	pg, err := build([]*Run{r})
	if err != nil {
		t.Fatal(err)
	}
	if has(pg) {
		t.Error("a run without Redis has a Redis chart")
	}
	r.Info = &runfiles.RunInfo{Resolved: runfiles.Resolved{Redis: "redis://127.0.0.1:6390"}}
	r.Samples[1].RedisFallbackRPS = 40
	if pg, err = build([]*Run{r}); err != nil {
		t.Fatal(err)
	}
	if !has(pg) {
		t.Fatal("a run with Redis has no Redis chart")
	}
	for _, c := range pg.Charts {
		if c.ID == "redis" && (len(c.Series) != 1 || c.Series[0].Values[1] != 40) {
			t.Errorf("redis series = %+v, want [.. 40]", c.Series)
		}
	}
}

// TestOlderRun: samples written before histograms and finished_total
// still draw; the charts say what they lack instead of inventing it.
func TestOlderRun(t *testing.T) {
	old := func(x float64) runfiles.Sample {
		return runfiles.Sample{Elapsed: x, AdmittedP99Ms: 900, ByPriority: map[string]runfiles.PrioritySample{"P0": {OfferedTotal: 10, SuccessRate: 0.5}}}
	}
	pg, err := build([]*Run{mkRun(old(1), old(2))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pg.Charts {
		switch c.ID {
		case "latency":
			if !strings.Contains(c.Note, "no latency histograms") {
				t.Errorf("latency note = %q", c.Note)
			}
			for _, s := range c.Series {
				if s.Values.points() != 0 {
					t.Errorf("latency %s drew %v from no histograms", s.Key, s.Values)
				}
			}
		case "success":
			if !strings.Contains(c.Note, "trailing 3 s rate") {
				t.Errorf("success note = %q", c.Note)
			}
			if v := c.Series[0].Values; v[0] != 50 || v[1] != 50 {
				t.Errorf("P0 success = %v, want the samples' 50 %%", v)
			}
		}
	}
}

// TestOneSampleAndHostileText: a run of one sample still renders, and text
// from the run files (narration, names) cannot break out of the page.
func TestOneSampleAndHostileText(t *testing.T) {
	r := mkRun(runfiles.Sample{Elapsed: 0.25, OfferedTotal: 3})
	evil := `</script><script>alert(1)</script><b onmouseover="x">`
	r.Summary.Name = evil
	r.Events = []runfiles.Event{{Time: t0.Add(100 * time.Millisecond), Kind: runfiles.EventNarration, Detail: evil, Fields: map[string]any{"step": 1.0, "kind": "watch"}},
		{Time: t0.Add(100 * time.Millisecond), Kind: runfiles.EventFaultApply, Detail: evil, Fields: map[string]any{"fault": evil, "detail": evil}}}
	var b strings.Builder
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script>alert", "<b onmouseover"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	if n := strings.Count(page, "<script"); n != 2 {
		t.Errorf("%d script elements, want 2 (the data and the hover script)", n)
	}
}

// Retries, hedges and ejected nodes: time-weighted means of the gateways'
// rates and of the nodes out of rotation (ejected or probing), gaps where
// no gateway was scraped.
func TestUpstreamSeries(t *testing.T) {
	node := func(ej string) runfiles.NodeSample { return runfiles.NodeSample{Up: true, Slots: 4, Ejection: ej} }
	r := mkRun(
		runfiles.Sample{Elapsed: 1, RetryRPS: 4, HedgeRPS: 1, Nodes: []runfiles.NodeSample{node(wire.EjectionInRotation), node(wire.EjectionEjected)}},
		runfiles.Sample{Elapsed: 2, RetryRPS: 8, HedgeRPS: 3, Nodes: []runfiles.NodeSample{node(wire.EjectionProbing), node(wire.EjectionEjected)}},
		runfiles.Sample{Elapsed: 3, GatewayStale: true, Nodes: []runfiles.NodeSample{node(""), node("")}},
	)
	f := computeFrame(r, newTimeline(r), 1)
	want := map[string][]float64{"retries": {4, 8, math.NaN()}, "hedges": {1, 3, math.NaN()}, "nodes_ejected": {1, 2, math.NaN()}}
	for key, w := range want {
		got := f.series[key]
		for i := range w {
			if math.IsNaN(w[i]) != math.IsNaN(got[i]) || (!math.IsNaN(w[i]) && got[i] != w[i]) {
				t.Errorf("%s = %v, want %v", key, got, w)
				break
			}
		}
	}
	f = computeFrame(r, newTimeline(r), 2)
	if got := f.series["retries"][0]; got != 6 {
		t.Errorf("retries over 2 s = %v, want the mean 6", got)
	}
}

// Admitted per second is the gateways' admissions (admitted_total) over the
// interval when the samples carry them: a burst of admitted requests
// ending at once (an OOM kill's errors) does not show as admissions.
// Older runs fall back to the admitted requests the clients saw end.
func TestAdmittedFromTheGateways(t *testing.T) {
	errs := wire.OutcomeError.String()
	r := mkRun(
		runfiles.Sample{Elapsed: 1, AdmittedTotal: 100, OutcomeTotal: map[string]uint64{errs: 0}},
		runfiles.Sample{Elapsed: 2, AdmittedTotal: 150, OutcomeTotal: map[string]uint64{errs: 5000}},
	)
	f := computeFrame(r, newTimeline(r), 1)
	if got := f.series["admitted"]; got[0] != 100 || got[1] != 50 {
		t.Errorf("admitted = %v, want [100 50] from admitted_total", got)
	}
	if got := f.series["failed.error"][1]; got != 5000 {
		t.Errorf("errors = %v, want 5000", got)
	}
	old := mkRun(
		runfiles.Sample{Elapsed: 1, OutcomeTotal: map[string]uint64{errs: 0}},
		runfiles.Sample{Elapsed: 2, OutcomeTotal: map[string]uint64{errs: 5000}},
	)
	f = computeFrame(old, newTimeline(old), 1)
	if got := f.series["admitted"][1]; got != 5000 {
		t.Errorf("older run: admitted = %v, want the 5000 that ended", got)
	}
}

// TestFaultStepFailures: a run whose fault steps failed shows FAIL and
// each failed step (escaped), thresholds or not; a run without shows
// neither. A run whose recorder lost lines says how many and why.
func TestFaultStepFailures(t *testing.T) {
	const step = `faults.0 (redis_outage): apply at 5s: <no Redis>`
	for _, tc := range []struct {
		name   string
		errs   []string
		lost   *runfiles.WriteErrors
		want   []string
		absent []string
	}{
		{"none", nil, nil, nil, []string{"fault step failed", "badge fail", "badge pass", "recording incomplete"}},
		{"one", []string{step}, nil, []string{`<span class="badge fail">FAIL</span>`, "run A: fault step failed: faults.0 (redis_outage): apply at 5s: &lt;no Redis&gt;"}, []string{"badge pass"}},
		{"lines lost", nil, &runfiles.WriteErrors{SamplesLost: 7, EventsLost: 1, First: "samples.jsonl: no space left on device"},
			[]string{"run A: recording incomplete: 7 lines not written to samples.jsonl and 1 to events.jsonl; the first error: samples.jsonl: no space left on device"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mkRun(runfiles.Sample{Elapsed: 1, OfferedTotal: 3})
			r.Summary.FaultStepErrors = tc.errs
			r.Summary.Pass = len(tc.errs) == 0
			if tc.lost != nil {
				r.Summary.WriteErrors = tc.lost
			}
			var b strings.Builder
			if err := Write(&b, r); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(page, a) {
					t.Errorf("the page has %q", a)
				}
			}
		})
	}
}

// TestBandsReappliedOrRevertedAlone: the fault bands follow the summary's
// windows (runfiles: faultApplied, faultReverted). A fault applied again
// while its band is open stays one band, from its first apply to its
// revert: the second apply opened a second band, and the first, never
// closed, was drawn to the end of the run. A revert with no apply before
// it (a fault active when the recording began) is a band from the start;
// a second revert changes nothing.
func TestBandsReappliedOrRevertedAlone(t *testing.T) {
	ev := func(x float64, kind, fault string) runfiles.Event {
		return runfiles.Event{Time: t0.Add(seconds(x)), Kind: kind, Detail: fault, Fields: map[string]any{"fault": fault, "detail": ""}}
	}
	r := mkRun(runfiles.Sample{Elapsed: 10}, runfiles.Sample{Elapsed: 20})
	r.Events = []runfiles.Event{
		ev(3, runfiles.EventFaultRevert, "gc_pressure"),
		ev(2, runfiles.EventFaultApply, "model_latency"),
		ev(4, runfiles.EventFaultApply, "model_latency"),
		ev(6, runfiles.EventFaultRevert, "model_latency"),
		ev(8, runfiles.EventFaultRevert, "model_latency"),
	}
	v := newRunView(0, r, newTimeline(r), frame{})
	want := []band{
		{Kind: "fault", Name: "gc_pressure", From: 0, To: 3},
		{Kind: "fault", Name: "model_latency", From: 2, To: 6},
	}
	if len(v.Bands) != len(want) {
		t.Fatalf("bands = %+v, want %+v", v.Bands, want)
	}
	for i := range want {
		if v.Bands[i] != want[i] {
			t.Errorf("band %d = %+v, want %+v", i, v.Bands[i], want[i])
		}
	}
}

// TestPlottedWhereMeasured: the lab samples a few ms after each 250 ms
// step (6.756 s, 7.006 s…), so each sample falls in the interval after the
// step it follows. Its values are plotted at its own time, not at that
// interval's end nearly a tick later: a node killed at 6.745 s first shows
// in the sample at 6.756 s and must be drawn there, beside the fault band
// that starts at 6.745 s, not at 7.0 s.
func TestPlottedWhereMeasured(t *testing.T) {
	var ss []runfiles.Sample
	for i := 1; i <= 40; i++ {
		up := 3
		if i >= 27 { // 6.756 s on
			up = 2
		}
		var nodes []runfiles.NodeSample
		for range up {
			nodes = append(nodes, runfiles.NodeSample{Up: true, Slots: 16})
		}
		ss = append(ss, runfiles.Sample{Elapsed: float64(i)*0.25 + 0.006, OfferedTotal: uint64(i * 10), Nodes: nodes})
	}
	r := mkRun(ss...)
	tl := newTimeline(r)
	f := computeFrame(r, tl, 0.25)
	up := f.series["nodes_up"]
	for i, x := range f.x {
		if math.IsNaN(up[i]) {
			continue
		}
		if up[i] == 2 {
			if math.Abs(x-6.756) > 1e-6 {
				t.Errorf("the first interval with 2 nodes up is drawn at %.3f s, want 6.756 s (its sample's time)", x)
			}
			return
		}
	}
	t.Fatal("no interval with 2 nodes up")
}
