package runfiles

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// referenceSeeds returns, for every reference run, its run.json, the
// first lines of its samples and events (the whole files are too big to
// mutate), and its summary.json.
func referenceSeeds(tb testing.TB) [][4][]byte {
	dirs, err := filepath.Glob("../../experiments/reference/*")
	if err != nil {
		tb.Fatal(err)
	}
	var out [][4][]byte
	head := func(b []byte, n int) []byte {
		var h []byte
		for i := 0; i < n && len(b) > 0; i++ {
			j := bytes.IndexByte(b, '\n')
			if j < 0 {
				return append(h, b...)
			}
			h, b = append(h, b[:j+1]...), b[j+1:]
		}
		return h
	}
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		var s [4][]byte
		for i, name := range []string{RunFile, SamplesFile, EventsFile, SummaryFile} {
			b, err := os.ReadFile(filepath.Join(d, name))
			if err != nil {
				tb.Fatal(err)
			}
			if name == SamplesFile || name == EventsFile {
				b = head(b, 3)
			}
			s[i] = b
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		tb.Fatal("no reference runs")
	}
	return out
}

// FuzzReadRun: a run folder holding any run.json, samples.jsonl,
// events.jsonl and summary.json (none when empty: a killed run) is read
// back, or refused with an error; it never panics, and a run read back
// has a summary and its text report is written. (A killed run's summary
// may hold ±Inf from a corrupt value near ±1e308 in its samples: a run
// like that is still read, as the HTML report still draws it.)
func FuzzReadRun(f *testing.F) {
	for _, s := range referenceSeeds(f) {
		f.Add(s[0], s[1], s[2], s[3])
		f.Add(s[0], s[1], s[2], []byte(nil)) // killed before summary.json
	}
	f.Add([]byte(nil), []byte(`{"t":"2026-12-01T01:45:54Z","elapsed_s":1,"offered_total":1e30}`+"\n"), []byte(nil), []byte(nil))
	f.Fuzz(func(t *testing.T, run, samples, events, summary []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{RunFile: run, SamplesFile: samples, EventsFile: events, SummaryFile: summary} {
			if len(b) == 0 {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r, err := ReadRun(dir)
		if err != nil {
			return
		}
		if r.Summary == nil {
			t.Fatal("a run read back without a summary")
		}
		if err := WriteReport(io.Discard, []*Run{r}); err != nil {
			t.Fatalf("report: %v", err)
		}
	})
}
