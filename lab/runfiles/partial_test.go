package runfiles

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestKilledRunReadsLikeItsSummary: a reference run's summary.json beside
// the Summary ReadRun rebuilds from the same run without it (a killed
// run): the load's duration (not the drain's), the rates over it, the
// goodput ratio (ok over the usable capacity, not over the capacity) and
// the Redis agree.
func TestKilledRunReadsLikeItsSummary(t *testing.T) {
	dirs, err := filepath.Glob("../../experiments/reference/*")
	if err != nil || len(dirs) < 7 {
		t.Fatalf("reference runs: %v %v", dirs, err)
	}
	// The goodput ratio is rebuilt in the same seconds as the finished
	// run's (tickSecond) and, from samples that record it, over the same
	// windows (window_s): it must then be summary.json's, but for the last
	// digit's rounding. Samples recorded before window_s was kept have
	// only elapsed_s, rounded to 1 ms: each 250 ms tick is weighed up to
	// 1 ms (0.4 %) long or short, with signs that average out over a
	// run's ≥ 80 ticks — the 17 references rebuild within 0.009 % of the
	// finished computation (below). 0.05 % keeps room for that and still
	// fails on buckets that differ: the old ones, edged by the summed dt,
	// put 8 of the 17 rebuilds 0.06 % to 3.6 % (02-semaphore) away.
	const ratioExact, ratioTol = 2e-6, 0.0005
	for _, ref := range dirs {
		if st, err := os.Stat(ref); err != nil || !st.IsDir() {
			continue // report.txt
		}
		t.Run(filepath.Base(ref), func(t *testing.T) {
			var want Summary
			b, err := os.ReadFile(filepath.Join(ref, SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			killed := t.TempDir()
			for _, f := range []string{RunFile, SamplesFile, EventsFile} {
				b, err := os.ReadFile(filepath.Join(ref, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(killed, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := ReadRun(killed)
			if err != nil {
				t.Fatal(err)
			}
			got := r.Summary
			if !r.Partial {
				t.Fatal("not read as a killed run")
			}
			for _, c := range []struct {
				name      string
				got, want float64
				tol       float64 // relative
			}{
				{"duration_s", got.DurationS, want.DurationS, 0.005},
				{"target_rps", got.TargetRPS, want.TargetRPS, 0.01},
				{"achieved_rps", got.AchievedRPS, want.AchievedRPS, 0.01},
				{"goodput_rps", got.GoodputRPS, want.GoodputRPS, 0.01},
				{"capacity_rps", got.CapacityRPS, want.CapacityRPS, 0.005},
				{"redis.fallbacks", got.Redis.Fallbacks, want.Redis.Fallbacks, 0.02},
			} {
				if math.Abs(c.got-c.want) > c.tol*math.Abs(c.want) {
					t.Errorf("%s = %v rebuilt, %v in summary.json (±%g%%)", c.name, c.got, c.want, c.tol*100)
				}
			}
			// A summary.json written before the ratio's seconds were fixed
			// (its samples have no window_s) holds a ratio computed over
			// other buckets: the rebuild is held to the finished
			// computation replayed on the same samples instead, each
			// generator window taken as the time between samples (as the
			// lab reads both clocks within microseconds of each other).
			samples, err := ReadSamples(killed)
			if err != nil {
				t.Fatal(err)
			}
			if samples[0].WindowS > 0 {
				if math.Abs(got.GoodputRatio-want.GoodputRatio) > ratioExact {
					t.Errorf("goodput_ratio = %v rebuilt, %v in summary.json", got.GoodputRatio, want.GoodputRatio)
				}
			} else if fin := replayRatio(samples, want); math.Abs(got.GoodputRatio-fin) > ratioTol*fin {
				t.Errorf("goodput_ratio = %v rebuilt, %v by the Aggregator over the same samples (±%g%%; summary.json, from older buckets: %v)",
					got.GoodputRatio, fin, ratioTol*100, want.GoodputRatio)
			}
			if got.Redis.Kind != want.Redis.Kind || got.Redis.Addr != want.Redis.Addr {
				t.Errorf("redis %q %q rebuilt, %q %q in summary.json", got.Redis.Kind, got.Redis.Addr, want.Redis.Kind, want.Redis.Addr)
			}
			if len(got.Redis.Failovers) != len(want.Redis.Failovers) {
				t.Fatalf("redis failovers %+v rebuilt, %+v in summary.json", got.Redis.Failovers, want.Redis.Failovers)
			}
			for i, f := range want.Redis.Failovers {
				g := got.Redis.Failovers[i]
				if g.Killed != f.Killed || g.By != f.By || g.AfterS != f.AfterS || math.Abs(g.AtS-f.AtS) > 0.1 {
					t.Errorf("redis failover %+v rebuilt, %+v in summary.json", g, f)
				}
			}
		})
	}
}

// replayRatio is the goodput ratio a finished run's Aggregator computes
// from samples (recorded without window_s) and the summary's ok count.
func replayRatio(samples []Sample, sum Summary) float64 {
	a := NewAggregator(sum.Started, 0)
	prev := samples[0].Time.Add(-time.Duration(samples[0].Elapsed * float64(time.Second)))
	for _, x := range samples {
		a.Add(x, x.Time.Sub(prev).Seconds(), 0, false, 0)
		prev = x.Time
	}
	_, ratio := capacityAndRatio(a.digests, float64(sum.Outcomes["ok"]))
	return ratio
}

// TestKilledRunLoadEnd: a run killed before its run_end event (what a
// SIGKILL leaves) lasted until the last sample that saw a request offered:
// mid-load, its last sample; while requests in flight drained, within a
// tick of the load's end, not the drain's.
func TestKilledRunLoadEnd(t *testing.T) {
	tests := []struct {
		name      string
		ref       string
		until     float64 // samples and events after this elapsed time are dropped
		wantDur   float64 // 0: the last kept sample's elapsed time
		tol       float64
		wantRedis string
	}{
		{name: "killed mid-load", ref: "06-redis-outage", until: 12, tol: 0.001, wantRedis: "server"},
		{name: "killed while draining", ref: "02-semaphore", until: math.Inf(1), wantDur: 20.006, tol: 0.26, wantRedis: "off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := filepath.Join("../../experiments/reference", tt.ref)
			samples, err := ReadSamples(ref)
			if err != nil {
				t.Fatal(err)
			}
			events, err := ReadEvents(ref)
			if err != nil {
				t.Fatal(err)
			}
			start := samples[0].Time.Add(-time.Duration(samples[0].Elapsed * float64(time.Second)))
			dir := t.TempDir()
			var kept []any
			wantDur := tt.wantDur
			for _, s := range samples {
				if s.Elapsed <= tt.until {
					kept = append(kept, s)
					if tt.wantDur == 0 {
						wantDur = s.Elapsed
					}
				}
			}
			writeJSONL(t, filepath.Join(dir, SamplesFile), kept)
			kept = nil
			for _, e := range events {
				if e.Kind != EventRunEnd && e.Time.Sub(start).Seconds() <= tt.until {
					kept = append(kept, e)
				}
			}
			writeJSONL(t, filepath.Join(dir, EventsFile), kept)
			r, err := ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.Summary.DurationS-wantDur) > tt.tol {
				t.Errorf("duration %v s, want %v ± %v", r.Summary.DurationS, wantDur, tt.tol)
			}
			if r.Summary.Redis.Kind != tt.wantRedis {
				t.Errorf("redis %q, want %q", r.Summary.Redis.Kind, tt.wantRedis)
			}
		})
	}
}

func writeJSONL(t *testing.T, path string, lines []any) {
	t.Helper()
	var b []byte
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, j...), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestKilledRunRatioFromWindows: samples that record their generator
// window (window_s) rebuild the goodput ratio a finished run's Aggregator
// computes from them, to the last digit. The windows jitter as a
// machine's timers do — four of 249.9 ms, then one of 250.4 ms — and the
// offer swings across the capacity from tick to tick, so that a tick
// counted in another second than the Aggregator's moves the ratio.
func TestKilledRunRatioFromWindows(t *testing.T) {
	start := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	var samples []Sample
	var lines []any
	at := 0.0
	var offered, ok uint64
	for i := range 80 {
		w := 0.2499
		if i%5 == 4 {
			w = 0.2504
		}
		at += w
		n := uint64(4) // 16 req/s against 40
		if i%8 >= 3 {
			n = 17 // 68 req/s
		}
		capRPS := 40.0
		if i >= 40 && i < 52 {
			capRPS = 10
		}
		offered += n
		ok += min(n, uint64(capRPS*w))
		x := Sample{
			Time: start.Add(time.Duration(at * float64(time.Second))), Elapsed: math.Round(at*1000) / 1000, WindowS: w,
			OfferedRPS: float64(n) / w, CapacityRPS: capRPS, OfferedTotal: offered,
			OutcomeTotal: map[string]uint64{"ok": ok},
		}
		samples = append(samples, x)
		lines = append(lines, x)
	}
	a := NewAggregator(start, 0)
	for _, x := range samples {
		a.Add(x, x.WindowS, 0, false, 0)
	}
	_, want := capacityAndRatio(a.digests, float64(ok))
	dir := t.TempDir()
	writeJSONL(t, filepath.Join(dir, SamplesFile), lines)
	writeJSONL(t, filepath.Join(dir, EventsFile), nil)
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Summary.GoodputRatio; want == 0 || math.Abs(got-want) > 2e-6 {
		t.Errorf("goodput ratio %v rebuilt, %v by the Aggregator", got, want)
	}
}

// TestKilledMidRunRecording: a recording started while load ran (the
// dashboard's record key, so a record_start event) and then killed counts
// only what it recorded: its duration runs from its first sample, not
// from the load's start, and its counts and target are the recorded
// span's. The load ran at 50 req/s for 10 s before the recording began,
// then at 100 req/s, and the samples' totals are the lab's since the
// load started.
func TestKilledMidRunRecording(t *testing.T) {
	start := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	var lines []any
	offered := uint64(500) // the 10 s at 50 req/s before the recording
	for i := 1; i <= 40; i++ {
		at := 10 + float64(i)*0.25
		offered += 25
		lines = append(lines, Sample{
			Time: start.Add(time.Duration(at * float64(time.Second))), Elapsed: at, WindowS: 0.25,
			TargetRPS: 100, OfferedRPS: 100, GoodputRPS: 100, CapacityRPS: 200,
			OfferedTotal: offered, OutcomeTotal: map[string]uint64{"ok": offered},
			ByPriority: map[string]PrioritySample{"P0": {OfferedTotal: offered / 5, OKTotal: offered / 5}},
			OOMKills:   2,
		})
	}
	dir := t.TempDir()
	writeJSONL(t, filepath.Join(dir, SamplesFile), lines)
	recStart := start.Add(10 * time.Second)
	writeJSONL(t, filepath.Join(dir, EventsFile), []any{Event{Time: recStart, Elapsed: 10, Kind: EventRecordStart, Detail: dir}})
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	// From the first sample at 10.25 s to the last at 20 s.
	if s.DurationS != 9.75 || s.Offered != 975 || s.Outcomes["ok"] != 975 || s.ByPriority["P0"].Offered != 195 {
		t.Errorf("duration %v s, offered %d, ok %d, P0 offered %d; want the recorded span's 9.75 s, 975, 975, 195",
			s.DurationS, s.Offered, s.Outcomes["ok"], s.ByPriority["P0"].Offered)
	}
	if s.TargetRPS != 100 || s.AchievedRPS != 100 || s.GoodputRPS != 100 || s.AchievedRateError != 0 {
		t.Errorf("target %v, achieved %v, goodput %v req/s, rate error %v; want 100, 100, 100, 0", s.TargetRPS, s.AchievedRPS, s.GoodputRPS, s.AchievedRateError)
	}
	if !s.Started.Equal(start.Add(10250*time.Millisecond)) || s.Gateway.OOMKills != 0 || s.Unaccounted != 0 {
		t.Errorf("started %v, OOM kills %d, unaccounted %d; want the first sample's time, 0, 0", s.Started, s.Gateway.OOMKills, s.Unaccounted)
	}
}

// killedRun writes samples and events as a run killed before its summary
// (no summary.json) and reads it back: the summary rebuilt from them.
func killedRun(t *testing.T, samples []Sample, events []Event) *Run {
	t.Helper()
	dir := t.TempDir()
	var sl, el []any
	for _, x := range samples {
		sl = append(sl, x)
	}
	for _, e := range events {
		el = append(el, e)
	}
	writeJSONL(t, filepath.Join(dir, SamplesFile), sl)
	writeJSONL(t, filepath.Join(dir, EventsFile), el)
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
