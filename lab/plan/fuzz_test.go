package plan

import (
	"io"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/runfiles/runfilestest"
)

// FuzzReadRunPlan: `levee plan RUN_DIR` over a folder holding any
// run.json, samples.jsonl and summary.json (none when empty) reads the
// run or refuses it with an error naming the folder, and a plan made from what it read is
// written or refused with an error. It never panics. Seeded with the
// reference runs' files (their first sample lines).
func FuzzReadRunPlan(f *testing.F) {
	for _, s := range runfilestest.ReferenceSeeds(f, "../../experiments/reference", 6) {
		f.Add(s[0], s[1], s[3])
		f.Add(s[0], s[1], []byte(nil))
		f.Add(s[0], []byte(nil), []byte(nil)) // refused: not a run folder
	}
	f.Fuzz(func(t *testing.T, run, samples, summary []byte) {
		dir := runfilestest.WriteRun(t, map[string][]byte{runfiles.RunFile: run, runfiles.SamplesFile: samples, runfiles.SummaryFile: summary})
		parts, err := ReadRun(dir, nil)
		if err != nil {
			// Most inputs end here: a refusal names the run folder.
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not name the run folder %s", err, dir)
			}
			return
		}
		p, err := New(parts)
		if err != nil {
			return
		}
		if err := p.Write(io.Discard); err != nil {
			t.Fatalf("a plan made is not written: %v", err)
		}
	})
}
