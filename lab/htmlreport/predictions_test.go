package htmlreport

import (
	"regexp"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// The numbers typed at a predict step stand beside what the run measured:
// in the Predictions table (one row per run and step) and under the predict
// step in the narration list. A run without predictions has no such panel.
func TestPredictionsBesideMeasured(t *testing.T) {
	dir := t.TempDir()
	a := synth{name: "collapse", samples: 40, seed: 1}.write(t, dir)
	b := synth{name: "protected", samples: 40, seed: 2, protected: true}.write(t, dir)
	var sb strings.Builder
	if err := Write(&sb, loadAll(t, a, b)...); err != nil {
		t.Fatal(err)
	}
	page := sb.String()
	if !strings.Contains(page, "<h2>Predictions</h2>") {
		t.Fatal("no Predictions panel")
	}
	for _, row := range []string{
		`<span class="run-label">A</span></td><td>1</td><th>P0 success %\?</th><td>60 %</td><td class="measured">34.2 %</td><td>0–7.5 s</td><td class="diff">−25.8 pp</td>`,
		`<span class="run-label">B</span></td><td>1</td><th>P0 success %\?</th><td>skipped</td><td class="measured">99.9 %</td><td>0–7.5 s</td><td class="diff"></td>`,
	} {
		if !regexp.MustCompile(row).MatchString(page) {
			t.Errorf("the predictions table lacks\n%s", row)
		}
	}
	// The window to the tenth, like the narration's times (not "0–8 s").
	mark := regexp.MustCompile(`Step 1 of collapse: what happens next\?\s*<small class="prediction">predicted 60 % · measured 34.2 %</small>`)
	if !mark.MatchString(page) {
		t.Error("the predict step's narration line does not carry the prediction and the measurement")
	}

	// Without prediction events: no panel, no marks.
	r := mkRun(runfiles.Sample{Elapsed: 0.25, OfferedTotal: 3}, runfiles.Sample{Elapsed: 1.25, OfferedTotal: 6})
	sb.Reset()
	if err := Write(&sb, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sb.String(), "<h2>Predictions</h2>") || strings.Contains(sb.String(), `class="prediction"`) {
		t.Error("a run without predictions shows a Predictions panel")
	}
}

func TestFmtWindow(t *testing.T) {
	for _, c := range []struct {
		from, to float64
		want     string
	}{{0, 16.506, "0–16.5 s"}, {6.503, 17.354, "6.5–17.4 s"}, {20, 50.02, "20–50 s"}, {90, 1800, "1:30–30:00"}} {
		if got := fmtWindow(c.from, c.to); got != c.want {
			t.Errorf("fmtWindow(%v, %v) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}
