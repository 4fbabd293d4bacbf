package runfiles

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// hugeKilledRun copies the killed run of testdata/report into a new
// folder with two samples in its middle holding the largest float64 in
// capacity_rps (the capacity's time-weighted sum overflows to +Inf) and
// in the gateway's lag (a finite figure 309 digits long), and returns
// the folder.
func hugeKilledRun(t *testing.T) string {
	t.Helper()
	src := filepath.Join("testdata", "report", "killed")
	dir := filepath.Join(t.TempDir(), "huge")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := os.ReadFile(filepath.Join(src, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RunFile), info, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(src, SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	// The run was killed: its last line is torn, and stays so.
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if mid := len(lines) / 2; i >= mid-6 && i <= mid+5 {
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatal(err)
			}
			m["capacity_rps"] = math.MaxFloat64
			if i == mid || i == mid+1 {
				m["lag_probe_p99_ms"] = math.MaxFloat64
			}
			if l, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		lines[i] = l
	}
	if err := os.WriteFile(filepath.Join(dir, SamplesFile), bytes.Join(lines, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOverflowedFigureReadsNA: a killed run whose samples hold a value
// near the largest float64 has figures that overflow when rebuilt; the
// text report prints such a figure as "n/a (overflow)" (NotFinite), never
// "+Inf" or "NaN", and a finite one too long to read (309 digits) in
// e-notation, so the table stays a table.
func TestOverflowedFigureReadsNA(t *testing.T) {
	dir := hugeKilledRun(t)
	if err := WriteTextReport(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	txt := string(b)
	if strings.Contains(txt, "Inf") || strings.Contains(txt, "NaN") {
		t.Errorf("report.txt prints a non-number:\n%s", txt)
	}
	row := func(label string) string {
		for _, l := range strings.Split(txt, "\n") {
			if strings.HasPrefix(l, label+" ") {
				return strings.TrimSpace(strings.TrimPrefix(l, label))
			}
		}
		t.Fatalf("report.txt has no %q row:\n%s", label, txt)
		return ""
	}
	if got := row("capacity req/s"); got != NotFinite {
		t.Errorf("capacity row %q, want %q", got, NotFinite)
	}
	if got := row("gateway lag p99"); got != "1.798e+308 ms" {
		t.Errorf("lag row %q, want 1.798e+308 ms", got)
	}
	for _, l := range strings.Split(txt, "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d characters: %q", n, l)
			break
		}
	}
}
