package runfiles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
)

// TestP0DuringFaultsNothingMeasured: p0_success_during_faults is the
// lowest P0 success over the fault windows in which a P0 request finished.
// With none (no fault, a window without P0 — null in summary.json —, or an
// older summary of a run offered no P0, which wrote 1) it is not a
// measurement: NaN with a note, a threshold on it is not met, and the
// report prints "-", never 100 %.
func TestP0DuringFaultsNothingMeasured(t *testing.T) {
	const base = `{"name": "x", "started": "2026-01-01T00:00:00Z", "outcomes": {}, "by_priority": {"P0": {"offered": %d}}, "faults": [%s]}`
	const (
		null   = `{"fault": "node_kill", "p0_success_rate": null}`
		one    = `{"fault": "node_kill", "p0_success_rate": 1}`
		ninety = `{"fault": "node_hang", "p0_success_rate": 0.9}`
	)
	tests := []struct {
		name      string
		p0Offered int
		faults    string
		want      float64 // NaN: nothing measured
		wantNote  string
		wantRow   string
	}{
		{name: "no fault", p0Offered: 10, want: math.NaN(), wantNote: "no fault in this run", wantRow: "-"},
		{name: "a window without P0 (null)", p0Offered: 10, faults: null, want: math.NaN(), wantNote: "no P0 request finished during a fault", wantRow: "-"},
		{name: "an older summary of a run without P0 (1)", p0Offered: 0, faults: one, want: math.NaN(), wantNote: "no P0 request finished during a fault", wantRow: "-"},
		{name: "one window measured, one not", p0Offered: 10, faults: null + "," + ninety, want: 0.9, wantRow: "90.00%"},
		{name: "an older summary with P0 (1)", p0Offered: 10, faults: one, want: 1, wantRow: "100.00%"},
	}
	th, err := experiment.ParseThreshold("p0_success_during_faults", ">= 0.995")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, SummaryFile), fmt.Appendf(nil, base, tt.p0Offered, tt.faults), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			v, note := r.Summary.Metric("p0_success_during_faults")
			if math.IsNaN(tt.want) != math.IsNaN(v) || (!math.IsNaN(v) && v != tt.want) || note != tt.wantNote {
				t.Errorf("metric = %v (%q), want %v (%q)", v, note, tt.want, tt.wantNote)
			}
			r.Summary.evaluate([]experiment.Threshold{th})
			if got := r.Summary.Thresholds[th.Name].Pass; got != (tt.want >= 0.995) {
				t.Errorf("threshold %s passes: %v", th.Expr, got)
			}
			if got := reportCell(t, r, "P0 success during faults"); got != tt.wantRow {
				t.Errorf("report: %q, want %q", got, tt.wantRow)
			}
		})
	}
}

// TestAggregatorFaultWithoutP0: a fault window in which no P0 request
// finished is written as a null rate, not as 1, and reads back so.
func TestAggregatorFaultWithoutP0(t *testing.T) {
	start := time.Unix(1000, 0)
	exp, err := experiment.ParseExperiment([]byte("name: agg\nduration: 10s\nclient_timeout: 1s\nthresholds: {p0_success_during_faults: \">= 0.995\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := NewAggregator(start, 100)
	a.FaultApplied("node_kill", start.Add(4*time.Second))
	a.FaultReverted("node_kill", start.Add(6*time.Second))
	for i := 1; i <= 40; i++ {
		el := float64(i) * 0.25
		a.Add(sampleAt(start, el, 100, 300, 48, []float64{16, 16, 16}, 0, 0, 0), 0.25, 0, false, 0)
	}
	tot := totals(10*time.Second, 1000, map[string]uint64{wire.OutcomeOK.String(): 1000})
	s := a.Summarize(SummaryInput{Exp: exp, Totals: tot, ShedExact: true, End: start.Add(10 * time.Second)})
	if len(s.Faults) != 1 || s.Faults[0].P0SuccessRate != nil {
		t.Fatalf("faults %+v: want one with no P0 rate", s.Faults)
	}
	if r := s.Thresholds["p0_success_during_faults"]; r.Pass || !math.IsNaN(r.Value) || r.Note == "" {
		t.Errorf("threshold %+v: want not met, no value, a note", r)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"p0_success_rate":null`)) {
		t.Errorf("summary.json faults: %s", b[bytes.Index(b, []byte(`"faults"`)):][:120])
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || back.Faults[0].P0SuccessRate != nil {
		t.Errorf("read back: %v %+v", err, back.Faults)
	}
}

// reportCell is the run's value in the text report's row called label.
func reportCell(t *testing.T, r *Run, label string) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteReport(&b, []*Run{r}); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(b.String()) {
		if rest, ok := strings.CutPrefix(line, label+"  "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no row %q in\n%s", label, b.String())
	return ""
}
