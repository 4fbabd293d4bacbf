package htmlreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPageStatesOneDuration: the run's header line and the key figures
// give the same duration, the load's — not the samples' span, which goes
// on while requests in flight drain (02-semaphore: 20.0 s of load, 21.7 s
// of samples) — for a finished run and for a killed one (no summary.json).
func TestPageStatesOneDuration(t *testing.T) {
	ref := filepath.Join("..", "..", "experiments", "reference")
	killed := t.TempDir()
	for _, f := range []string{"run.json", "samples.jsonl", "events.jsonl"} {
		b, err := os.ReadFile(filepath.Join(ref, "02-semaphore", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(killed, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 01's duration is its summary's: the load's, which an OOM kill can
	// stretch past 60 s.
	var full struct {
		DurationS float64 `json:"duration_s"`
	}
	b, err := os.ReadFile(filepath.Join(ref, "01-no-defenses", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &full); err != nil || full.DurationS < 60 {
		t.Fatalf("01-no-defenses summary: duration %v s, %v", full.DurationS, err)
	}
	tests := []struct {
		name, dir string
		want      string // the duration the page states
	}{
		{"finished, quick", filepath.Join(ref, "02-semaphore"), "20.0 s"},
		{"finished, full length, an OOM kill", filepath.Join(ref, "01-no-defenses"), fmt.Sprintf("%.1f s", full.DurationS)},
		{"killed", killed, "20.0 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := loadAll(t, tt.dir)
			pg, err := build(runs)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := render(&buf, pg); err != nil {
				t.Fatal(err)
			}
			if header := fmt.Sprintf(" · %s", tt.want); !strings.Contains(buf.String(), header) {
				t.Errorf("the header line does not state %q (run view: %v s)", tt.want, pg.Runs[0].DurationS)
			}
			for _, rw := range pg.Figures.Rows {
				if rw.Label == "duration" && rw.Cells[0] != tt.want {
					t.Errorf("key figures: duration %s, want %s", rw.Cells[0], tt.want)
				}
			}
		})
	}
}
