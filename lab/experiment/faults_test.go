package experiment

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/chaos"
)

// TestStepForIsTheOnlyTimer: a fault's own `for` (node_kill restarts its
// node after 10 s by default) would end a step without the lab's revert —
// no revert event, so the run's summary keeps the fault's window open —
// and cut a longer step `for` short. Normalize leaves the step's `for` as
// the only timer, as experiments/README.md's example promises.
func TestStepForIsTheOnlyTimer(t *testing.T) {
	const head = "name: x\nduration: 60s\nfaults:\n  - "
	tests := []struct {
		step    string
		wantFor time.Duration // the step's for after Normalize
	}{
		// The README's example: back after 30 s, not after node_kill's 10 s.
		{"{at: 20s, fault: node_kill, params: {node: 1}, for: 30s}", 30 * time.Second},
		{"{at: 20s, fault: node_kill, params: {node: 1, for: 0s}, for: 30s}", 30 * time.Second},
		// No step for: the fault's own becomes the step's, so the lab reverts it.
		{"{at: 20s, fault: node_kill}", 10 * time.Second},
		{"{at: 5s, fault: redis_outage, params: {for: 4s}}", 4 * time.Second},
		{"{at: 5s, fault: traffic_spike, params: {factor: 2, for: 0s}}", 0},
		// A fault without a for of its own is left as it is.
		{"{at: 5s, fault: model_latency, params: {multiplier: 3}, for: 7s}", 7 * time.Second},
	}
	for _, tt := range tests {
		y := head + tt.step + "\n"
		if strings.Contains(tt.step, "redis_outage") {
			y += "redis: embedded\n"
		}
		e := mustParse(t, y)
		f := e.Faults[0]
		if f.For.D() != tt.wantFor {
			t.Errorf("%s: step for %v, want %v", tt.step, f.For, tt.wantFor)
		}
		// What the lab applies: the fault's own timer is off.
		if own, has := ownFor(f); has && own != 0 {
			t.Errorf("%s: the fault's own for is %v: it would end the step without the lab's revert", tt.step, own)
		}
		if _, has := ownFor(f); !has && f.Params["for"] != nil {
			t.Errorf("%s: params.for %v added to a fault that has none", tt.step, f.Params["for"])
		}
		// The applied parameters decode in the catalogue.
		tl := e.Timeline()
		if _, err := chaos.Default.New(tl[0].Fault, tl[0].Params); err != nil {
			t.Errorf("%s: timeline params: %v", tt.step, err)
		}
		// Idempotent.
		again := e.Clone()
		if err := again.Normalize(); err != nil || again.Faults[0].For != f.For {
			t.Errorf("%s: normalized twice: %v, for %v", tt.step, err, again.Faults[0].For)
		}
	}
}

func TestStepForAndOwnForBothSetIsAnError(t *testing.T) {
	_, err := ParseExperiment([]byte("name: x\nduration: 60s\nfaults:\n  - {at: 20s, fault: node_kill, params: {node: 1, for: 5s}, for: 30s}\n"))
	if err == nil || !strings.Contains(err.Error(), "faults.0.params.for") {
		t.Fatalf("err = %v, want one naming faults.0.params.for", err)
	}
}

// TestFaultStepNodeList: a step's node may list several nodes (two of
// three killed at once), in flow or block YAML; the lab's timeline hands
// the list to the fault as it was written.
func TestFaultStepNodeList(t *testing.T) {
	for _, y := range []string{
		"name: x\nduration: 60s\nfaults:\n  - {at: 20s, fault: node_kill, params: {node: [0, 2]}, for: 30s}\n",
		"name: x\nduration: 60s\nfaults:\n  - at: 20s\n    fault: node_kill\n    params:\n      node:\n        - 0\n        - 2\n    for: 30s\n",
	} {
		e := mustParse(t, y)
		tl := e.Timeline()
		f, err := chaos.Default.New(tl[0].Fault, tl[0].Params)
		if err != nil {
			t.Fatalf("%q: timeline params %s: %v", y, tl[0].Params, err)
		}
		if k := f.(*chaos.NodeKill); !slices.Equal(k.Node, chaos.Nodes(0, 2)) || k.For != 0 {
			t.Errorf("%q: node %v, own for %v; want [0 2] and the step's for alone", y, k.Node, k.For)
		}
		if d := f.Detail(); d != "nodes #1, #3" {
			t.Errorf("%q: Detail %q, want \"nodes #1, #3\"", y, d)
		}
		if e.Faults[0].For.D() != 30*time.Second {
			t.Errorf("%q: step for %v, want 30s", y, e.Faults[0].For)
		}
	}
}
