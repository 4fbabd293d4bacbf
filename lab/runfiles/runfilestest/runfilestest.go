// Package runfilestest gives fuzz tests of run-folder readers their seeds
// (the reference runs' files) and a run folder made of any bytes.
package runfilestest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// Names are the files a Seed holds, in its order.
var Names = [4]string{runfiles.RunFile, runfiles.SamplesFile, runfiles.EventsFile, runfiles.SummaryFile}

// Seed is one reference run's run.json, the first lines of its
// samples.jsonl and events.jsonl (the whole files are too big to mutate)
// and its summary.json, in the order of Names.
type Seed [4][]byte

// ReferenceSeeds returns a Seed for every run folder under dir (the
// repository's experiments/reference), each sample and event file cut to
// its first lines lines; it fails tb when there is none.
func ReferenceSeeds(tb testing.TB, dir string, lines int) []Seed {
	tb.Helper()
	infos, err := filepath.Glob(filepath.Join(dir, "*", runfiles.RunFile))
	if err != nil || len(infos) == 0 {
		tb.Fatalf("no reference runs under %s: %v", dir, err)
	}
	out := make([]Seed, 0, len(infos))
	for _, info := range infos {
		var s Seed
		for i, name := range Names {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(info), name))
			if err != nil {
				tb.Fatal(err)
			}
			if name == runfiles.SamplesFile || name == runfiles.EventsFile {
				b = head(b, lines)
			}
			s[i] = b
		}
		out = append(out, s)
	}
	return out
}

// head is b's first n lines (all of b when it has fewer).
func head(b []byte, n int) []byte {
	end := 0
	for range n {
		j := bytes.IndexByte(b[end:], '\n')
		if j < 0 {
			return b
		}
		end += j + 1
	}
	return b[:end]
}

// WriteRun makes a run folder in a temporary directory holding files
// (a name of Names and its bytes); an empty file is left out, as a run
// killed before writing it. It returns the folder.
func WriteRun(tb testing.TB, files map[string][]byte) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, b := range files {
		if len(b) == 0 {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}
