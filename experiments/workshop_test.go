package experiments_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// The workshop's table of expected numbers says its values come from the
// reference runs, and facilitators read them to the room. When the
// references are re-recorded the table must follow: each lesson whose
// reference measured its predict step quotes that measurement in the
// table's "expected" column, as `levee report` prints it.
func TestWorkshopExpectedTableQuotesTheReferences(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "WORKSHOP.md"))
	if err != nil {
		t.Fatal(err)
	}
	expected := workshopExpectedColumn(t, string(doc))
	dirs, err := filepath.Glob(filepath.Join("reference", "*"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		run, err := runfiles.ReadRun(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		lesson := filepath.Base(dir)
		for _, p := range run.Predictions {
			if p.Measured == nil {
				continue
			}
			cell, ok := expected[lesson]
			if !ok {
				t.Errorf("WORKSHOP.md's expected numbers have no row for %s (its reference measured %s)", lesson, p.Label())
				continue
			}
			// The number alone: the table writes units its own way ("≈ 42 (… measured 41.9)").
			want := strings.Fields(runfiles.FormatPredictionValue(*p.Measured, p.Unit))[0]
			if !containsNumber(cell, want) {
				t.Errorf("WORKSHOP.md's expected value for %s is %q: it does not quote the reference's %s, %s (levee report experiments/reference/%s)",
					lesson, cell, p.Label(), want, lesson)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no reference run with a measured predict step: the test checked nothing")
	}
}

// workshopExpectedColumn returns the "expected" cell of each row of the
// "Expected numbers" table, by lesson name.
func workshopExpectedColumn(t *testing.T, doc string) map[string]string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Expected numbers")
	if !ok {
		t.Fatal(`WORKSHOP.md has no "## Expected numbers" section`)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(line, "|")
		// | lesson | predict step asks | expected | other figures |
		if len(cells) != 6 {
			continue
		}
		rows[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[3])
	}
	if len(rows) == 0 {
		t.Fatal("WORKSHOP.md's expected numbers table has no rows")
	}
	return rows
}

var number = regexp.MustCompile(`\d[\d,]*(\.\d+)?`)

// containsNumber reports whether want ("8.38", "150") is one of text's
// numbers — whole, so that "1.5" is not found in "1.55".
func containsNumber(text, want string) bool {
	for _, n := range number.FindAllString(text, -1) {
		if strings.ReplaceAll(n, ",", "") == want {
			return true
		}
	}
	return false
}
