package htmlreport

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// TestOverflowedFigureReadsNA: a killed run whose samples hold the
// largest float64 (capacity, lag) has a capacity whose time-weighted sum
// overflows in its rebuilt summary; the key-figures table prints it as
// report.txt does, "n/a (overflow)" (runfiles.NotFinite), and the lag
// (finite, 309 digits) in e-notation; beside a sane run, the overflowed
// figure has no difference and no trend. The table said "+Inf /s", a
// difference of "+Inf /s (×+Inf)", and the lag in 309 grouped digits.
func TestOverflowedFigureReadsNA(t *testing.T) {
	write := func(name string, huge bool) *Run {
		t.Helper()
		rd := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(rd, 0o755); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for i := 1; i <= 40; i++ {
			s := runfiles.Sample{Time: t0.Add(seconds(float64(i) * 0.25)), Elapsed: float64(i) * 0.25, WindowS: 0.25,
				OfferedRPS: 100, GoodputRPS: 90, LagProbeP99Ms: 3, CapacityRPS: 100, OfferedTotal: uint64(25 * i)}
			// Twelve quarter-seconds of the largest capacity: its
			// time-weighted sum overflows (3 × MaxFloat64).
			if huge && i >= 15 && i <= 26 {
				s.CapacityRPS = math.MaxFloat64
			}
			if huge && (i == 20 || i == 21) {
				s.LagProbeP99Ms = math.MaxFloat64
			}
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
		if err := os.WriteFile(filepath.Join(rd, runfiles.SamplesFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Load(rd)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pg, err := build([]*Run{write("sane", false), write("huge", true)})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]row{}
	for _, r := range pg.Figures.Rows {
		rows[r.Label] = r
		for _, c := range r.Cells {
			if strings.Contains(c, "Inf") || strings.Contains(c, "NaN") || len(c) > 40 {
				t.Errorf("%s: cell %q", r.Label, c)
			}
		}
		for _, d := range r.Diffs {
			if strings.Contains(d.Text, "Inf") || strings.Contains(d.Text, "NaN") || len(d.Text) > 40 {
				t.Errorf("%s: difference %q", r.Label, d.Text)
			}
		}
	}
	if c := rows["capacity"]; len(c.Cells) != 2 || c.Cells[1] != runfiles.NotFinite || len(c.Diffs) != 1 || c.Diffs[0] != (diff{}) {
		t.Errorf("capacity row %+v, want the second run's %q with no difference", c, runfiles.NotFinite)
	}
	if c := rows["gateway lag p99"]; len(c.Cells) != 2 || c.Cells[1] != "1.798e+308 ms" {
		t.Errorf("lag row %+v, want the second run's 1.798e+308 ms", c)
	}
	var b strings.Builder
	if err := Write(&b, write("alone", true)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), runfiles.NotFinite) {
		t.Errorf("the page does not say %q", runfiles.NotFinite)
	}
}
