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
	// The goodput ratio's 1 s buckets follow the generator's windows in a
	// finished run and the samples' ticks here: where the capacity is close
	// to the offer, the bucket edges move it by a few per cent.
	const ratioTol = 0.03
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
				{"goodput_ratio", got.GoodputRatio, want.GoodputRatio, ratioTol},
				{"redis.fallbacks", got.Redis.Fallbacks, want.Redis.Fallbacks, 0.02},
			} {
				if math.Abs(c.got-c.want) > c.tol*math.Abs(c.want) {
					t.Errorf("%s = %v rebuilt, %v in summary.json (±%g%%)", c.name, c.got, c.want, c.tol*100)
				}
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
