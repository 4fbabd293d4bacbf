package runfiles_test

import (
	"io"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/runfiles/runfilestest"
)

// FuzzReadRun: a run folder holding any run.json, samples.jsonl,
// events.jsonl and summary.json (none when empty: a killed run) is read
// back, or refused with an error naming the folder; it never panics, and a run read back
// has a summary and its text report is written. (A killed run's summary
// may hold ±Inf from a corrupt value near ±1e308 in its samples: a run
// like that is still read, as the HTML report still draws it.)
func FuzzReadRun(f *testing.F) {
	for _, s := range runfilestest.ReferenceSeeds(f, "../../experiments/reference", 3) {
		f.Add(s[0], s[1], s[2], s[3])
		f.Add(s[0], s[1], s[2], []byte(nil)) // killed before summary.json
	}
	f.Add([]byte(nil), []byte(`{"t":"2026-12-01T01:45:54Z","elapsed_s":1,"offered_total":1e30}`+"\n"), []byte(nil), []byte(nil))
	// Refused: a bad line that is not the last; an empty folder.
	f.Add([]byte(nil), []byte("not json\n{}\n"), []byte(nil), []byte(nil))
	f.Add([]byte(nil), []byte(nil), []byte(nil), []byte(nil))
	f.Fuzz(func(t *testing.T, run, samples, events, summary []byte) {
		dir := runfilestest.WriteRun(t, map[string][]byte{runfiles.RunFile: run, runfiles.SamplesFile: samples, runfiles.EventsFile: events, runfiles.SummaryFile: summary})
		r, err := runfiles.ReadRun(dir)
		if err != nil {
			// Most inputs end here: bad input is an error naming the folder
			// (and the file), never a bare decoder message.
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not name the run folder %s", err, dir)
			}
			return
		}
		if r.Summary == nil {
			t.Fatal("a run read back without a summary")
		}
		if err := runfiles.WriteReport(io.Discard, []*runfiles.Run{r}); err != nil {
			t.Fatalf("report: %v", err)
		}
	})
}
