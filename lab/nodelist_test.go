package lab

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/runfiles"
)

// TestNodeListFaultsOnChildProcesses: in a lab of three real node
// processes, a fault step's `node: [0, 2]` acts on exactly nodes 0 and 2 —
// model_slots changes their knobs, node_kill SIGKILLs their processes and
// leaves node 1's running — the dashboard's samples name the nodes, and
// each revert gives the nodes back what they had: their slots, their
// processes (restarted; node 1's untouched).
func TestNodeListFaultsOnChildProcesses(t *testing.T) {
	exp := mustParse(t, `
name: node-list
duration: forever
stages: [{duration: 1s, target: 20}]
mix: {routes: {predict: 1}}
nodes:
  count: 3
  knobs: {slots: 8, latency: {dist: fixed, fixed_ms: 20}}
faults:
  - {at: 1h, fault: model_slots, params: {node: [0, 2], slots: 3}}
  - {at: 1h, fault: node_kill, params: {node: [0, 2]}}
`)
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop(context.Background())
	ch := l.Samples()
	waitFor := func(what string, f func(runfiles.Sample) bool) runfiles.Sample {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case s, ok := <-ch:
				if !ok {
					t.Fatal("samples closed")
				}
				if f(s) {
					return s
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: no sample in 5 s", what)
			}
		}
		t.Fatalf("%s: not seen in 20 s", what)
		return runfiles.Sample{}
	}
	// nodes reads the samples' nodes as "up/slots" per node.
	nodes := func(s runfiles.Sample) string {
		out := ""
		for _, n := range s.Nodes {
			out += fmt.Sprintf("%d:%v/%g ", n.Index, n.Up, n.Slots)
		}
		return out
	}
	fault := func(s runfiles.Sample, name string) string {
		for _, f := range s.Faults {
			if f.Name == name {
				return f.Detail
			}
		}
		return ""
	}
	waitFor("three nodes up", func(s runfiles.Sample) bool { return nodes(s) == "0:true/8 1:true/8 2:true/8 " })

	// model_slots on [0, 2]: exactly those nodes' slots, and back.
	if err := l.ToggleFault("model_slots"); err != nil {
		t.Fatal(err)
	}
	s := waitFor("model_slots on nodes 0 and 2", func(s runfiles.Sample) bool {
		return fault(s, "model_slots") != "" && nodes(s) == "0:true/3 1:true/8 2:true/3 "
	})
	if d := fault(s, "model_slots"); d != "3 slots nodes #1, #3" {
		t.Errorf("model_slots shows %q, want %q", d, "3 slots nodes #1, #3")
	}
	for i, want := range []float64{3, 8, 3} {
		k, err := l.sup.NodeKnobs(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		if k["slots"] != want {
			t.Errorf("node %d slots %v under model_slots [0, 2], want %v", i, k["slots"], want)
		}
	}
	if err := l.ToggleFault("model_slots"); err != nil {
		t.Fatal(err)
	}
	waitFor("model_slots reverted", func(s runfiles.Sample) bool {
		return len(s.Faults) == 0 && nodes(s) == "0:true/8 1:true/8 2:true/8 "
	})

	// node_kill on [0, 2]: those two processes die, node 1's lives on.
	before := l.ChildPIDs()
	if err := l.ToggleFault("node_kill"); err != nil {
		t.Fatal(err)
	}
	s = waitFor("nodes 0 and 2 down", func(s runfiles.Sample) bool {
		return fault(s, "node_kill") != "" && nodes(s) == "0:false/8 1:true/8 2:false/8 "
	})
	if d := fault(s, "node_kill"); d != "nodes #1, #3" {
		t.Errorf("node_kill shows %q, want %q", d, "nodes #1, #3")
	}
	waitGone(t, map[string]int{"node-0": before["node-0"], "node-2": before["node-2"]}, 10*time.Second)
	if processGone(before["node-1"]) {
		t.Error("node-1's process died under node_kill [0, 2]")
	}
	if err := l.ToggleFault("node_kill"); err != nil {
		t.Fatal(err)
	}
	waitFor("nodes 0 and 2 restarted", func(s runfiles.Sample) bool {
		return len(s.Faults) == 0 && nodes(s) == "0:true/8 1:true/8 2:true/8 "
	})
	after := l.ChildPIDs()
	if after["node-1"] != before["node-1"] {
		t.Errorf("node-1 pid %d → %d: restarted by node_kill [0, 2]", before["node-1"], after["node-1"])
	}
	for _, n := range []string{"node-0", "node-2"} {
		if after[n] == before[n] || after[n] == 0 || processGone(after[n]) {
			t.Errorf("%s pid %d → %d: not restarted by the revert", n, before[n], after[n])
		}
	}
}
