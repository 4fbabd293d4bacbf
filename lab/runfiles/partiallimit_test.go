package runfiles

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A killed run's rebuilt summary measures the global rate limit as the
// finished one did (the reference run of lesson 06b, its summary.json
// removed); with run.json's experiment edited into an invalid one the
// run is refused, naming the file and the field.
func TestKilledRunGlobalLimit(t *testing.T) {
	src := filepath.Join("..", "..", "experiments", "reference", "06-redis-cluster")
	finished, err := ReadRun(src)
	if err != nil {
		t.Fatal(err)
	}
	copyRun := func(edit func([]byte) []byte) string {
		dir := t.TempDir()
		for _, name := range []string{RunFile, SamplesFile, EventsFile} {
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				t.Fatal(err)
			}
			if name == RunFile {
				b = edit(b)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	killed, err := ReadRun(copyRun(func(b []byte) []byte { return b }))
	if err != nil {
		t.Fatal(err)
	}
	if !killed.Partial || killed.Summary.RateLimit == nil {
		t.Fatalf("rebuilt: partial %v, global limit %+v", killed.Partial, killed.Summary.RateLimit)
	}
	for p, want := range finished.Summary.RateLimit.ByPriority {
		got := killed.Summary.RateLimit.ByPriority[p]
		for _, pair := range [][2]LimitSpan{{got.Steady, want.Steady}, {got.Faults, want.Faults}} {
			g, w := pair[0], pair[1]
			if math.Abs(g.Seconds-w.Seconds) > 0.01 || math.Abs(g.Error-w.Error) > 1e-3 {
				t.Errorf("%s: rebuilt %+v, the summary measured %+v", p, g, w)
			}
		}
	}
	bad := copyRun(func(b []byte) []byte {
		out := bytes.Replace(b, []byte(`"P2": 0.6`), []byte(`"P2": -0.6`), 1)
		if bytes.Equal(out, b) {
			t.Fatal("run.json has no P2 weight to break")
		}
		return out
	})
	// An edited run.json is refused, naming the file and the field: its
	// limits would be judged on an experiment no run played.
	if broken, err := ReadRun(bad); err == nil || !strings.Contains(err.Error(), "run.json: the experiment it holds: mix.priorities.P2: -0.6: want a weight ≥ 0") {
		t.Errorf("an invalid experiment in run.json: ReadRun = %+v, %v; want an error naming run.json and the weight", broken, err)
	}
}
