package htmlreport

import (
	"io"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/runfiles/runfilestest"
)

// FuzzLoadAndWrite: a run folder holding any run.json, samples.jsonl,
// events.jsonl and summary.json (none when empty: a killed run) is
// loaded, or refused with an error naming the folder; a run that loads
// gives a page. It
// never panics. Seeded with the reference runs' files (their first
// sample and event lines).
func FuzzLoadAndWrite(f *testing.F) {
	for _, s := range runfilestest.ReferenceSeeds(f, "../../experiments/reference", 4) {
		f.Add(s[0], s[1], s[2], s[3])
		f.Add(s[0], s[1], s[2], []byte(nil))
		f.Add(s[0], []byte(nil), s[2], s[3]) // refused: a summary alone draws nothing
	}
	f.Fuzz(func(t *testing.T, run, samples, events, summary []byte) {
		dir := runfilestest.WriteRun(t, map[string][]byte{runfiles.RunFile: run, runfiles.SamplesFile: samples, runfiles.EventsFile: events, runfiles.SummaryFile: summary})
		r, err := Load(dir)
		if err != nil {
			// Most inputs end here: a malformed file is an error naming it.
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not name the run folder %s", err, dir)
			}
			return
		}
		if err := Write(io.Discard, r); err != nil {
			t.Fatalf("a run that loads gives no page: %v", err)
		}
	})
}
