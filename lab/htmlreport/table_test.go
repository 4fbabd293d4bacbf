package htmlreport

import "testing"

// TestFiguresRowsWhole: every row of the key figures has a cell for each
// run and each difference column (the last row, thresholds passed, had no
// difference cells, and its rule stopped short of the table's edge).
func TestFiguresRowsWhole(t *testing.T) {
	dir := t.TempDir()
	runs := loadAll(t, synth{name: "a", samples: 40, seed: 1}.write(t, dir),
		synth{name: "b", samples: 40, seed: 2, protected: true}.write(t, dir),
		synth{name: "c", samples: 40, seed: 3, protected: true}.write(t, dir))
	for _, rw := range figuresTable(runs).Rows {
		if len(rw.Cells) != 3 || len(rw.Diffs) != 2 {
			t.Errorf("%s: %d cells and %d differences, want 3 and 2", rw.Label, len(rw.Cells), len(rw.Diffs))
		}
	}
}
