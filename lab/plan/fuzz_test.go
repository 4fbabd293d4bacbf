package plan

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// FuzzReadRunPlan: `levee plan RUN_DIR` over a folder holding any
// run.json, samples.jsonl and summary.json (none when empty) reads the
// run or refuses it with an error, and a plan made from what it read is
// written or refused with an error. It never panics. Seeded with the
// reference runs' files (their first sample lines).
func FuzzReadRunPlan(f *testing.F) {
	infos, err := filepath.Glob("../../experiments/reference/*/" + runfiles.RunFile)
	if err != nil || len(infos) == 0 {
		f.Fatalf("no reference runs: %v", err)
	}
	for _, info := range infos {
		d := filepath.Dir(info)
		var s [3][]byte
		for i, name := range []string{runfiles.RunFile, runfiles.SamplesFile, runfiles.SummaryFile} {
			b, err := os.ReadFile(filepath.Join(d, name))
			if err != nil {
				f.Fatal(err)
			}
			if i == 1 { // the first samples only: the whole file is too big to mutate
				end := 0
				for n := 0; n < 6; n++ {
					j := bytes.IndexByte(b[end:], '\n')
					if j < 0 {
						break
					}
					end += j + 1
				}
				b = b[:end]
			}
			s[i] = b
		}
		f.Add(s[0], s[1], s[2])
		f.Add(s[0], s[1], []byte(nil))
	}
	f.Fuzz(func(t *testing.T, run, samples, summary []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{runfiles.RunFile: run, runfiles.SamplesFile: samples, runfiles.SummaryFile: summary} {
			if len(b) == 0 {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		parts, err := ReadRun(dir, nil)
		if err != nil {
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
