package experiment

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/levee-lab/levee/experiments"
)

// FuzzParseExperiment: any file either fails with an error or parses into
// an experiment that Normalize leaves as it is (Normalize is idempotent)
// and that reads back from its run.json form (JSON) as the same
// experiment. It never panics. Seeded with every lesson file.
func FuzzParseExperiment(f *testing.F) {
	names, err := fs.Glob(experiments.FS, "*.yaml")
	if err != nil || len(names) == 0 {
		f.Fatalf("no lesson files: %v", err)
	}
	for _, name := range names {
		b, err := fs.ReadFile(experiments.FS, name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(goodExperiment))
	f.Add([]byte("name: x\nduration: forever\n"))
	f.Add([]byte("name: x\nduration: 1s\nnodes: {count: 2.5}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("name: x\nduration: 20s\nfaults:\n  - {at: 1s, fault: node_kill, params: {node: [0, 2]}}\n  - {at: 2s, fault: model_slots, params: {node: [1, 1]}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseExperiment(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("accepted experiment does not write as JSON: %v", err)
		}
		again := e.Clone()
		if err := again.Normalize(); err != nil {
			t.Fatalf("Normalize refuses what it accepted: %v", err)
		}
		if got, _ := json.Marshal(again); !bytes.Equal(got, want) {
			t.Fatalf("Normalize is not idempotent:\n%s\n%s", want, got)
		}
		var back Experiment
		if err := json.Unmarshal(want, &back); err != nil {
			t.Fatalf("run.json form does not read back: %v\n%s", err, want)
		}
		if got, _ := json.Marshal(&back); !bytes.Equal(got, want) {
			t.Fatalf("run.json round trip:\n%s\n%s", want, got)
		}
	})
}
