package runfiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRecorderCountsEveryFailedWrite: when appending to samples.jsonl
// fails (here a full disk: the file is /dev/full), the recorder reports
// the first error on its log at once and, at Finish, how many lines each
// file lacks — in summary.json (write_errors), report.txt and the log —
// not only the first failure.
func TestRecorderCountsEveryFailedWrite(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full:", err)
	}
	dir := t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(dir, SamplesFile)); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rec, err := OpenRecorder(dir, RunInfo{Name: "full"}, WithErrorLog(&log))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	for i := range 3 {
		err := rec.WriteSample(Sample{Time: now, Elapsed: float64(i)})
		if err == nil || !strings.Contains(err.Error(), SamplesFile) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("write %d: %v, want ENOSPC naming %s", i, err, SamplesFile)
		}
	}
	if err := rec.WriteEvent(Event{Time: now, Kind: EventRunStart}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Errorf("log before Finish has %d lines, want the first error alone:\n%s", n, log.String())
	}
	sum := Summary{Name: "full", Started: now, Outcomes: map[string]uint64{}, ByPriority: map[string]PrioritySummary{}}
	if err := rec.Finish(sum, ""); err != nil {

		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var got Summary
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	w := got.WriteErrors
	if w == nil || w.SamplesLost != 3 || w.EventsLost != 0 || !strings.Contains(w.First, "no space left") {
		t.Fatalf("summary write_errors %+v, want 3 samples lost, 0 events, the first error", w)
	}

	for name, text := range map[string]string{"log": log.String(), ReportFile: readFile(t, filepath.Join(dir, ReportFile))} {
		if !strings.Contains(text, "3 lines not written to samples.jsonl and 0 to events.jsonl") || !strings.Contains(text, "no space left") {
			t.Errorf("%s does not say how many lines were lost and why:\n%s", name, text)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
