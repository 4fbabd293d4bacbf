package runfiles

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestReportGolden prints recorded runs side by side: two finished runs
// (lessons 01 and 03 recorded with --quick) and one killed run that has
// only samples (its last line torn).
func TestReportGolden(t *testing.T) {
	var runs []*Run
	for _, d := range []string{"01", "03", "killed"} {
		r, err := ReadRun(filepath.Join("testdata", "report", d))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	if !runs[2].Partial || runs[0].Partial {
		t.Fatalf("partial flags: %v %v", runs[0].Partial, runs[2].Partial)
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, runs); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("report differs from %s (run with -update if intended):\n%s", golden, buf.String())
	}
}

func TestReportErrors(t *testing.T) {
	if err := WriteReport(&bytes.Buffer{}, nil); err == nil {
		t.Error("empty report accepted")
	}
	if _, err := ReadRun(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no summary.json") {
		t.Errorf("empty folder: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, SummaryFile), []byte("{not json"), 0o644)
	if _, err := ReadRun(dir); err == nil {
		t.Error("bad summary.json accepted")
	}
}

func TestGroupDigits(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "999": "999", "1000": "1,000", "1234567": "1,234,567", "-12345": "-12,345"} {
		if got := groupDigits(in); got != want {
			t.Errorf("groupDigits(%s) = %s, want %s", in, got, want)
		}
	}
}

// The text report lists the fault steps that failed to apply or revert
// (summary.json's fault_step_errors) under each run that has any, naming
// each step, after its failed thresholds; a run with none gets no block.
func TestReportFaultStepErrors(t *testing.T) {
	const block = "fault steps that failed"
	apply := "faults.0 (redis_outage): apply at 5s: chaos: redis_outage: lab: this lab has no Redis"
	revert := "faults.2 (node_kill): revert at 9s: node 1 did not come back"
	failing := func() *Run {
		return &Run{Summary: &Summary{Name: "broken", FaultStepErrors: []string{apply, revert}}}
	}
	for _, tt := range []struct {
		name string
		runs []*Run
		want []string // substrings, in this order
		not  []string
	}{
		{"none", []*Run{{Summary: &Summary{Name: "fine"}}}, nil, []string{block, "✗", "fault step"}},
		{"the thresholds row says the run failed", []*Run{failing()}, []string{"none, FAIL 2 fault steps"}, nil},
		{"two steps", []*Run{failing()},
			[]string{"\nbroken: " + block + "\n  ✗ " + apply + "\n  ✗ " + revert + "\n"}, nil},
		{"side by side: only the failing run", []*Run{{Summary: &Summary{Name: "fine"}}, failing()},
			[]string{"broken: " + block, apply}, []string{"fine: " + block}},
		{"after its failed thresholds", []*Run{func() *Run {
			r := failing()
			r.Summary.Thresholds = map[string]ThresholdResult{"unaccounted": {Expr: "== 0", Value: 3, Pass: false}}
			return r
		}()}, []string{"broken: failed thresholds", "unaccounted", "broken: " + block, revert}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteReport(&b, tt.runs); err != nil {
				t.Fatal(err)
			}
			out, rest := b.String(), b.String()
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("report lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("report has %q:\n%s", n, out)
				}
			}
		})
	}
}
