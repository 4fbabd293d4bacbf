package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// nodeFaults are the catalogue's faults with a node parameter, each with
// the parameters that make it act on nodes.
var nodeFaults = []struct{ name, base string }{
	{"node_kill", `"for":"0s"`},
	{"model_latency", `"multiplier":2`},
	{"model_slots", `"slots":3`},
	{"node_hang", `"hang_rate":1`},
	{"model_errors", `"error_rate":0.5`},
	{"gc_pressure", `"target":"node","churn_mb_per_s":10,"ballast_mb":0`},
}

// nodeOf is the node parameter of a fault of nodeFaults.
func nodeOf(f Fault) NodeSet {
	switch f := f.(type) {
	case *NodeKill:
		return f.Node
	case *ModelLatency:
		return f.Node
	case *ModelSlots:
		return f.Node
	case *NodeHang:
		return f.Node
	case *ModelErrors:
		return f.Node
	case *GCPressure:
		return f.Node
	}
	return nil
}

// TestNodeParam: every fault's node takes an index, -1, or a list of
// indexes; it writes back as it was given (one index as the integer), and
// a bad one is a ParamError on node saying what is wrong.
func TestNodeParam(t *testing.T) {
	good := []struct {
		node  string
		want  NodeSet
		json  string // as the fault writes it
		text  string // NodeSet.String
		fits3 bool   // CheckTargets passes on 3 nodes
	}{
		{`0`, Nodes(0), `0`, "#1", true},
		{`2`, Nodes(2), `2`, "#3", true},
		{`-1`, AllNodes(), `-1`, "all nodes", true},
		{`[0,2]`, Nodes(0, 2), `[0,2]`, "nodes #1, #3", true},
		{` [ 2 , 0 ] `, Nodes(2, 0), `[2,0]`, "nodes #3, #1", true},
		{`[1]`, Nodes(1), `1`, "#2", true},
		{`[0,1,2]`, Nodes(0, 1, 2), `[0,1,2]`, "nodes #1, #2, #3", true},
		{`3`, Nodes(3), `3`, "#4", false},
		{`[0,3]`, Nodes(0, 3), `[0,3]`, "nodes #1, #4", false},
	}
	bad := []struct{ node, msg string }{
		{`[]`, "the list is empty"},
		{`[0,0]`, "node 0 is listed twice"},
		{`[2,0,2]`, "node 2 is listed twice"},
		{`[-1]`, "-1 (every node) stands alone"},
		{`[0,-1]`, "-1 (every node) stands alone"},
		{`[-2]`, "entry 0: must be ≥ 0, got -2"},
		{`[1,-3]`, "entry 1: must be ≥ 0, got -3"},
		{`-2`, "must be ≥ 0, or -1 for every node; got -2"},
		{`"0"`, `or a list of indexes such as [0, 2]; got "0"`},
		{`1.5`, "got 1.5"},
		{`true`, "got true"},
		{`{}`, "got {}"},
		{`[0.5]`, "entry 0: must be a node index (0-based), got 0.5"},
		{`[0,"a"]`, `entry 1: must be a node index (0-based), got "a"`},
		{`[[0]]`, "entry 0"},
	}
	for _, nf := range nodeFaults {
		for _, g := range good {
			t.Run(nf.name+" "+g.node, func(t *testing.T) {
				f, err := Default.New(nf.name, json.RawMessage(fmt.Sprintf(`{%s,"node":%s}`, nf.base, g.node)))
				if err != nil {
					t.Fatal(err)
				}
				if got := nodeOf(f); !slices.Equal(got, g.want) {
					t.Errorf("node %v, want %v", got, g.want)
				}
				var p struct {
					Node json.RawMessage `json:"node"`
				}
				b, _ := json.Marshal(f)
				if err := json.Unmarshal(b, &p); err != nil || string(p.Node) != g.json {
					t.Errorf("writes node as %s (%v), want %s", p.Node, err, g.json)
				}
				if got := nodeOf(f).String(); got != g.text {
					t.Errorf("text %q, want %q", got, g.text)
				}
				if !strings.Contains(f.Detail(), g.text) {
					t.Errorf("Detail %q does not show %q", f.Detail(), g.text)
				}
				err = CheckTargets(f, Topology{Nodes: 3})
				var pe *ParamError
				switch {
				case g.fits3 && err != nil:
					t.Errorf("CheckTargets on 3 nodes: %v", err)
				case !g.fits3 && (!errors.As(err, &pe) || pe.Field != "node" || !strings.Contains(pe.Msg, "node 3 does not exist")):
					t.Errorf("CheckTargets on 3 nodes = %v, want a ParamError on node naming node 3", err)
				}
			})
		}
		for _, b := range bad {
			t.Run(nf.name+" "+b.node, func(t *testing.T) {
				f, err := Default.New(nf.name, json.RawMessage(fmt.Sprintf(`{%s,"node":%s}`, nf.base, b.node)))
				var pe *ParamError
				if !errors.As(err, &pe) || pe.Fault != nf.name || pe.Field != "node" || !strings.Contains(pe.Msg, b.msg) {
					t.Fatalf("New = %v, %v; want a ParamError of %s on node saying %q", f, err, nf.name, b.msg)
				}
			})
		}
		t.Run(nf.name+" null", func(t *testing.T) { // as an int did: the default stays
			def, _ := Default.Get(nf.name)
			f, err := Default.New(nf.name, json.RawMessage(fmt.Sprintf(`{%s,"node":null}`, nf.base)))
			if err != nil || !slices.Equal(nodeOf(f), nodeOf(def)) {
				t.Errorf("node null: %v, %v; want the default %v", f, err, nodeOf(def))
			}
		})
	}
}

// A NodeSet made in Go is validated as one decoded: Validate refuses what
// the JSON form would.
func TestNodeSetValidate(t *testing.T) {
	for _, tc := range []struct {
		set NodeSet
		msg string // "" when valid
	}{
		{Nodes(0), ""},
		{AllNodes(), ""},
		{Nodes(1, 0), ""},
		{nil, "the list is empty"},
		{Nodes(), "the list is empty"},
		{Nodes(-2), "got -2"},
		{Nodes(0, -1), "stands alone"},
		{Nodes(-1, -1), "stands alone"},
		{Nodes(1, 1), "listed twice"},
	} {
		f := NewModelSlots()
		f.Node = tc.set
		err := f.Validate()
		var pe *ParamError
		if tc.msg == "" && err != nil || tc.msg != "" && (!errors.As(err, &pe) || pe.Field != "node" || !strings.Contains(pe.Msg, tc.msg)) {
			t.Errorf("%#v: Validate = %v, want %q", tc.set, err, tc.msg)
		}
	}
}

// TestNodeListApplyRevert: a fault on a list of nodes acts on exactly
// those nodes (the others are never patched, killed or restarted) and its
// revert restores what each had before — a value set before the fault,
// not the node's default.
func TestNodeListApplyRevert(t *testing.T) {
	for _, tc := range []struct {
		fault, params string
		key           string // knob the fault sets; "" for node_kill
		want          float64
	}{
		{"model_latency", `{"node":[0,2],"multiplier":4}`, "latency_multiplier", 4},
		{"model_slots", `{"node":[2,0],"slots":3}`, "slots", 3},
		{"node_hang", `{"node":[0,2],"hang_rate":0.5}`, "hang_rate", 0.5},
		{"model_errors", `{"node":[0,2],"error_rate":0.25}`, "error_rate", 0.25},
		{"gc_pressure", `{"target":"node","node":[0,2],"churn_mb_per_s":30,"ballast_mb":0}`, "churn_mb_per_s", 30},
		{"node_kill", `{"node":[0,2],"for":"0s"}`, "", 0},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			env := newFakeEnv(4)
			if tc.key != "" {
				// Node 2 runs with a value of its own; the revert must bring it back.
				env.knobs[2][tc.key] = 0.125
			}
			f, err := Default.New(tc.fault, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := f.Apply(ctx, env); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				listed := i == 0 || i == 2
				if tc.key == "" {
					if env.up[i] == listed {
						t.Errorf("node %d up %v after killing [0, 2]", i, env.up[i])
					}
					continue
				}
				got := normalize(env.knobs[i][tc.key])
				if listed && got != tc.want || !listed && got != normalize(originalKnobs()[tc.key]) {
					t.Errorf("node %d %s = %v (listed %v)", i, tc.key, got, listed)
				}
			}
			if err := f.Revert(ctx, env); err != nil {
				t.Fatal(err)
			}
			if tc.key != "" {
				if got := normalize(env.knobs[2][tc.key]); got != 0.125 {
					t.Errorf("node 2 %s = %v after the revert, want its own 0.125 back", tc.key, got)
				}
				env.knobs[2][tc.key] = originalKnobs()[tc.key]
			}
			if d := env.pristine(); d != "" {
				t.Errorf("after Revert: %s", d)
			}
			touched := 0
			for _, c := range env.calls {
				w := strings.Fields(c) // "patch 2 map[…]", "kill 0", "restart 2"
				if w[0] != "patch" && w[0] != "kill" && w[0] != "restart" {
					continue
				}
				touched++
				if w[1] != "0" && w[1] != "2" {
					t.Errorf("unlisted node touched: %q", c)
				}
			}
			if touched != 4 { // each listed node once by Apply, once by Revert
				t.Errorf("%d node calls, want 4: %v", touched, env.calls)
			}
		})
	}
}

// A list naming a node the lab lacks is refused before any node is
// touched: the listed nodes that exist are not patched or killed first.
func TestNodeListOutOfRangeTouchesNothing(t *testing.T) {
	env := newFakeEnv(3)
	for _, nf := range nodeFaults {
		f, err := Default.New(nf.name, json.RawMessage(fmt.Sprintf(`{%s,"node":[0,3]}`, nf.base)))
		if err != nil {
			t.Fatalf("%s: %v", nf.name, err)
		}
		err = f.Apply(context.Background(), env)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Field != "node" || f.Active() {
			t.Errorf("%s on [0, 3] of 3 nodes: %v, active %v", nf.name, err, f.Active())
		}
	}
	if env.pristine() != "" || env.callCount() != 0 {
		t.Errorf("env touched: %v", env.calls)
	}
}

// TestNodeListOnRealNodes: on three real fake model nodes over HTTP,
// node_hang and model_slots on [0, 2] change exactly nodes 0 and 2 — they
// hang, node 1 answers — and their reverts give each node back the knobs
// it had, node 2's own slots included.
func TestNodeListOnRealNodes(t *testing.T) {
	env := startNodes(t, 3)
	ctx := context.Background()
	if _, err := env.admin(ctx, 2, http.MethodPut, []byte(`{"slots":7}`)); err != nil {
		t.Fatal(err)
	}
	before := make([]map[string]any, 3)
	for i := range 3 {
		k, err := env.admin(ctx, i, http.MethodGet, nil)
		if err != nil {
			t.Fatal(err)
		}
		before[i] = k
	}
	hang, err := Default.New("node_hang", json.RawMessage(`{"node":[0,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	slots, err := Default.New("model_slots", json.RawMessage(`{"node":[0,2],"slots":3}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Fault{hang, slots} {
		if err := f.Apply(ctx, env); err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
	}
	if got, want := hang.Detail(), "nodes #1, #3"; got != want {
		t.Errorf("node_hang Detail %q, want %q", got, want)
	}
	for i := range 3 {
		k, err := env.admin(ctx, i, http.MethodGet, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantHang, wantSlots := 1.0, 3.0
		if i == 1 {
			wantHang, wantSlots = before[1][wire.KnobHangRate].(float64), before[1][wire.KnobSlots].(float64)
		}
		if k[wire.KnobHangRate] != wantHang || k[wire.KnobSlots] != wantSlots {
			t.Errorf("node %d under the faults: hang_rate %v slots %v, want %v %v", i, k[wire.KnobHangRate], k[wire.KnobSlots], wantHang, wantSlots)
		}
	}
	if got := env.outcome(t, 1, 30*time.Second); got != http.StatusOK {
		t.Errorf("node 1, not listed, answered %d, want 200", got)
	}
	for _, i := range []int{0, 2} {
		if got := env.outcome(t, i, 200*time.Millisecond); got != 0 {
			t.Errorf("node %d answered %d under node_hang [0, 2], want no answer", i, got)
		}
	}
	for _, f := range []Fault{slots, hang} {
		if err := f.Revert(ctx, env); err != nil {
			t.Fatalf("%s revert: %v", f.Name(), err)
		}
	}
	for i := range 3 {
		k, err := env.admin(ctx, i, http.MethodGet, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{wire.KnobHangRate, wire.KnobSlots} {
			if k[key] != before[i][key] {
				t.Errorf("node %d %s = %v after the reverts, want %v as before", i, key, k[key], before[i][key])
			}
		}
	}
}
