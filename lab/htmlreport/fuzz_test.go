package htmlreport

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// FuzzLoadAndWrite: a run folder holding any run.json, samples.jsonl,
// events.jsonl and summary.json (none when empty: a killed run) is
// loaded, or refused with an error; a run that loads gives a page. It
// never panics. Seeded with the reference runs' files (their first
// sample and event lines).
func FuzzLoadAndWrite(f *testing.F) {
	dirs, err := filepath.Glob("../../experiments/reference/*/" + runfiles.RunFile)
	if err != nil || len(dirs) == 0 {
		f.Fatalf("no reference runs: %v", err)
	}
	head := func(b []byte, n int) []byte {
		end := 0
		for i := 0; i < n; i++ {
			j := bytes.IndexByte(b[end:], '\n')
			if j < 0 {
				return b
			}
			end += j + 1
		}
		return b[:end]
	}
	for _, d := range dirs {
		d = filepath.Dir(d)
		var s [4][]byte
		for i, name := range []string{runfiles.RunFile, runfiles.SamplesFile, runfiles.EventsFile, runfiles.SummaryFile} {
			b, err := os.ReadFile(filepath.Join(d, name))
			if err != nil {
				f.Fatal(err)
			}
			if i == 1 || i == 2 {
				b = head(b, 4)
			}
			s[i] = b
		}
		f.Add(s[0], s[1], s[2], s[3])
		f.Add(s[0], s[1], s[2], []byte(nil))
	}
	f.Fuzz(func(t *testing.T, run, samples, events, summary []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{runfiles.RunFile: run, runfiles.SamplesFile: samples, runfiles.EventsFile: events, runfiles.SummaryFile: summary} {
			if len(b) == 0 {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Load(dir)
		if err != nil {
			return
		}
		if err := Write(io.Discard, r); err != nil {
			t.Fatalf("a run that loads gives no page: %v", err)
		}
	})
}
