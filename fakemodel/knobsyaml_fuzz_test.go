package fakemodel

import (
	"bytes"
	"io/fs"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/experiments"
)

// FuzzKnobsYAML: any knob file (--config knobs.yaml) gives valid knobs
// or an error that leaves the base unchanged, and accepted knobs written
// as YAML (Knobs.MarshalYAML) read back the same. It never panics.
// Seeded with every lesson's nodes.knobs block.
func FuzzKnobsYAML(f *testing.F) {
	names, _ := fs.Glob(experiments.FS, "*.yaml")
	for _, name := range names {
		b, err := fs.ReadFile(experiments.FS, name)
		if err != nil {
			f.Fatal(err)
		}
		var lesson struct {
			Nodes struct {
				Knobs map[string]any `yaml:"knobs"`
			} `yaml:"nodes"`
		}
		if err := yaml.Unmarshal(b, &lesson); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		if k, err := yaml.Marshal(lesson.Nodes.Knobs); err == nil {
			f.Add(k)
		}
	}
	for _, s := range []string{"latency:\n  dist: fixed\n  fixed_ms: 50\nslots: 8\n", "slots: 2.5\n", "latency: {dist: lognormal, p50_ms: 1e308}\n", "---\n---\n", ""} {
		f.Add([]byte(s))
	}
	base := DefaultKnobs()
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := LoadKnobsYAML(bytes.NewReader(b), base)
		if err != nil {
			if k != base {
				t.Fatal("a refused file changed the knobs")
			}
			return
		}
		if err := k.Validate(); err != nil {
			t.Fatalf("accepted invalid knobs: %v", err)
		}
		out, err := yaml.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		back, err := LoadKnobsYAML(bytes.NewReader(out), DefaultKnobs())
		if err != nil || back != k {
			t.Fatalf("round trip through\n%s: %v\n%+v\n%+v", out, err, k, back)
		}
	})
}
