package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
)

// writeTinyRun writes a run folder of a few samples and a summary.
func writeTinyRun(t *testing.T, dir string) string {
	t.Helper()
	rd := filepath.Join(dir, "tiny")
	if err := os.MkdirAll(rd, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	for i := 1; i <= 8; i++ {
		s := runfiles.Sample{Time: start.Add(time.Duration(i) * 250 * time.Millisecond), Elapsed: float64(i) / 4,
			OfferedTotal: uint64(25 * i), OutcomeTotal: map[string]uint64{wire.OutcomeOK.String(): uint64(20 * i)},
			ByPriority:  map[string]runfiles.PrioritySample{"P0": {OfferedTotal: uint64(i), OKTotal: uint64(i), FinishedTotal: uint64(i)}},
			CapacityRPS: 100, Inflight: 5, Nodes: []runfiles.NodeSample{{Up: true, Slots: 4}}}
		line, _ := json.Marshal(s)
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(rd, runfiles.SamplesFile), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, _ := json.Marshal(runfiles.Summary{Name: "tiny", Started: start, DurationS: 2, Offered: 200,
		Outcomes: map[string]uint64{wire.OutcomeOK.String(): 160}, ByPriority: map[string]runfiles.PrioritySummary{"P0": {Offered: 8, OK: 8, SuccessRate: 1}}})
	if err := os.WriteFile(filepath.Join(rd, runfiles.SummaryFile), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	return rd
}

func TestReportHTML(t *testing.T) {
	dir := t.TempDir()
	run := writeTinyRun(t, dir)
	out := filepath.Join(dir, "r.html")
	var stdout, stderr bytes.Buffer
	if code := runReport([]string{"--html", out, run}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!doctype html>", `<svg class="chart"`, `id="levee-data"`, "tiny"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page has no %q", want)
		}
	}
	if bytes.Contains(page, []byte("http://")) || bytes.Contains(page, []byte("https://")) {
		t.Error("the page refers to the network")
	}
	if !strings.Contains(stdout.String(), "P0 success") {
		t.Errorf("the text table is missing from stdout:\n%s", stdout.String())
	}

	// "-": the page on stdout instead of the table.
	stdout.Reset()
	if code := runReport([]string{run, "--html", "-"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "<!doctype html>") {
		t.Fatalf("--html -: exit %d, stdout starts %.40q", code, stdout.String())
	}
}

func TestReportHTMLBadInput(t *testing.T) {
	dir := t.TempDir()
	run := writeTinyRun(t, dir)
	summaryOnly := filepath.Join(dir, "summary-only")
	if err := os.MkdirAll(summaryOnly, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(summaryOnly, runfiles.SummaryFile), []byte(`{"name":"s","started":"2026-01-01T00:00:00Z","outcomes":{},"by_priority":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--html", filepath.Join(dir, "no", "such", "r.html"), run}, 2, "no such file"},
		{[]string{"--html", dir, run}, 2, "is a folder"},
		{[]string{"--html", filepath.Join(dir, "r.html"), run, run, run, run, run}, 2, "at most 4"},
		{[]string{"--html", filepath.Join(dir, "r.html"), summaryOnly}, 1, "nothing to draw"},
	} {
		var stdout, stderr bytes.Buffer
		code := runReport(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("report %q: exit %d, stderr %q; want exit %d with %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("a failed report left a file")
	}
	// levee run checks --html before starting anything.
	var stdout, stderr bytes.Buffer
	if code := runRun([]string{"--html", filepath.Join(dir, "no", "r.html"), filepath.Join("..", "..", "experiments", "01-no-defenses.yaml")}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "--html") {
		t.Errorf("run with a bad --html: exit %d, %q; want 2 before the run", code, stderr.String())
	}
}

// TestReportBadRun: `levee report` refuses a run it cannot read whole, and
// says which file and where: a summary.json without the fields every
// summary has, or (a killed run, no summary.json) a samples.jsonl with a
// bad line before its last. Reading such a run as a blank one, or as the
// samples before the bad line, would report numbers the run never had.
func TestReportBadRun(t *testing.T) {
	dir := t.TempDir()
	good := writeTinyRun(t, dir)
	emptySummary := filepath.Join(dir, "empty-summary")
	killed := filepath.Join(dir, "killed")
	for _, d := range []string{emptySummary, killed} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(emptySummary, runfiles.SummaryFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	samples, err := os.ReadFile(filepath.Join(good, runfiles.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(samples), "\n")
	lines[2] = "garbage\n" // line 3 of 8
	if err := os.WriteFile(filepath.Join(killed, runfiles.SamplesFile), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		run  string
		want []string
	}{
		{emptySummary, []string{filepath.Join(emptySummary, runfiles.SummaryFile), "missing name, started, outcomes, by_priority"}},
		{killed, []string{filepath.Join(killed, runfiles.SamplesFile), "line 3"}},
	} {
		var stdout, stderr bytes.Buffer
		code := runReport([]string{good, c.run}, &stdout, &stderr)
		if code != 1 || stdout.Len() != 0 {
			t.Errorf("report %s: exit %d, stdout %q; want exit 1 and no table", c.run, code, stdout.String())
		}
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("report %s: stderr %q; want %q in it", c.run, stderr.String(), w)
			}
		}
	}
}

// TestReportNotAFolder: a RUN_DIR that does not exist or is a file is a
// usage error (exit 2) naming it, reported before any run is read and
// before --html writes anything (a file read as "the events do not read
// back: open FILE/events.jsonl: not a directory", exit 1).
func TestReportNotAFolder(t *testing.T) {
	dir := t.TempDir()
	good := writeTinyRun(t, dir)
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nosuch")
	html := filepath.Join(dir, "r.html")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{good, file}, "run folder " + file + ": not a folder"},
		{[]string{missing, good}, "run folder " + missing + ": no such folder"},
		{[]string{"--html", html, good, file}, "run folder " + file + ": not a folder"},
	} {
		var stdout, stderr bytes.Buffer
		code := runReport(c.args, &stdout, &stderr)
		if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("report %q: exit %d, stdout %q, stderr %q; want exit 2, no table, %q", c.args, code, stdout.String(), stderr.String(), c.want)
		}
		if n := strings.Count(strings.TrimSpace(stderr.String()), "\n"); n != 0 {
			t.Errorf("report %q: %d lines on stderr, want one", c.args, n+1)
		}
	}
	if _, err := os.Stat(html); err == nil {
		t.Error("a refused report wrote its --html file")
	}
}
