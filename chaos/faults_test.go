package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// checkEnv inspects the env while a fault is applied.
type checkEnv func(t *testing.T, e *fakeEnv)

func TestFaultsApplyRevert(t *testing.T) {
	knob := func(node int, key string, want float64) checkEnv {
		return func(t *testing.T, e *fakeEnv) {
			t.Helper()
			if got := normalize(e.knobs[node][key]); got != want {
				t.Errorf("node %d %s = %v, want %v", node, key, got, want)
			}
		}
	}
	for _, tc := range []struct {
		fault  string
		params string
		checks []checkEnv
	}{
		{"model_latency", `{"multiplier":4,"add_ms":50}`, []checkEnv{
			knob(0, "latency_multiplier", 4), knob(2, "latency_multiplier", 4), knob(1, "latency_add_ms", 50)}},
		{"model_latency", `{"node":1,"multiplier":2}`, []checkEnv{
			knob(1, "latency_multiplier", 2), knob(0, "latency_multiplier", 1)}},
		{"model_slots", `{"slots":3}`, []checkEnv{knob(0, "slots", 3), knob(2, "slots", 3)}},
		{"node_hang", `{"node":2}`, []checkEnv{knob(2, "hang_rate", 1), knob(0, "hang_rate", 0)}},
		{"model_errors", `{"error_rate":0.25}`, []checkEnv{knob(1, "error_rate", 0.25)}},
		{"gc_pressure", `{}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.pressure["churn_mb_per_s"] != 200.0 || e.pressure["ballast_mb"] != 256.0 {
				t.Errorf("gateway pressure %v", e.pressure)
			}
		}}},
		{"gc_pressure", `{"target":"node","node":0,"churn_mb_per_s":50,"ballast_mb":0}`, []checkEnv{
			knob(0, "churn_mb_per_s", 50), knob(1, "churn_mb_per_s", 0)}},
		{"cpu_hog", `{"goroutines":3,"duty":0.25}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.pressure["cpu_hog_goroutines"] != 3.0 || e.pressure["cpu_hog_duty"] != 0.25 {
				t.Errorf("gateway pressure %v", e.pressure)
			}
		}}},
		{"slow_clients", `{"share":0.2,"kbps":4}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.slowShare != 0.2 || e.slowKBps != 4 {
				t.Errorf("slow clients %v %v", e.slowShare, e.slowKBps)
			}
		}}},
		{"traffic_spike", `{"factor":5,"for":"0s"}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.rateFactor != 5 {
				t.Errorf("rate factor %v", e.rateFactor)
			}
		}}},
		{"node_kill", `{"node":1,"for":"0s"}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.up[1] || !e.up[0] {
				t.Errorf("up %v", e.up)
			}
		}}},
		{"node_kill", `{"node":-1,"for":"0s"}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.up[0] || e.up[1] || e.up[2] {
				t.Errorf("up %v", e.up)
			}
		}}},
		{"redis_outage", `{"for":"0s"}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.redisUp {
				t.Error("redis up")
			}
		}}},
		{"redis_master_kill", `{"for":"0s"}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.masterDown != 7 {
				t.Errorf("killed node %d, want the busiest master's node 7", e.masterDown)
			}
		}}},
		{"redis_master_kill", `{"master":2,"for":"0s"}`, []checkEnv{func(t *testing.T, e *fakeEnv) {
			if e.masterDown != 12 {
				t.Errorf("killed node %d, want master 2's node 12", e.masterDown)
			}
		}}},
	} {
		t.Run(tc.fault+tc.params, func(t *testing.T) {
			env := newFakeEnv(3)
			f, err := Default.New(tc.fault, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := f.Apply(ctx, env); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !f.Active() {
				t.Error("not active after Apply")
			}
			for _, c := range tc.checks {
				c(t, env)
			}
			n := env.callCount()
			if err := f.Apply(ctx, env); err != nil || env.callCount() != n {
				t.Errorf("second Apply: %v, %d new env calls", err, env.callCount()-n)
			}
			if d := f.Detail(); d == "" {
				t.Error("empty Detail")
			}
			if err := f.Revert(ctx, env); err != nil {
				t.Fatalf("Revert: %v", err)
			}
			if f.Active() {
				t.Error("active after Revert")
			}
			if d := env.pristine(); d != "" {
				t.Errorf("after Revert: %s", d)
			}
			n = env.callCount()
			if err := f.Revert(ctx, env); err != nil || env.callCount() != n {
				t.Errorf("second Revert: %v, %d new env calls", err, env.callCount()-n)
			}
			// And once more: a reverted fault applies again.
			if err := f.Apply(ctx, env); err != nil || !f.Active() {
				t.Errorf("re-Apply: %v", err)
			}
			if err := f.Revert(ctx, env); err != nil || env.pristine() != "" {
				t.Errorf("re-Revert: %v, %s", err, env.pristine())
			}
		})
	}
}

// Faults with a duration revert themselves when it ends; a stale expiry
// (from an earlier application) does nothing.
func TestFaultExpiry(t *testing.T) {
	for _, tc := range []struct{ fault, params string }{
		{"node_kill", `{"node":0,"for":"10s"}`},
		{"traffic_spike", `{"factor":2,"for":"10s"}`},
		{"redis_outage", `{"for":"10s"}`},
		{"redis_master_kill", `{"master":1,"for":"10s"}`},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			env := newFakeEnv(2)
			env.manualAfter = true
			f, err := Default.New(tc.fault, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := f.Apply(ctx, env); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(env.calls, ";"), "after 10s") {
				t.Errorf("no After(10s): %v", env.calls)
			}
			env.fire()
			if f.Active() || env.pristine() != "" {
				t.Errorf("after expiry: active %v, env %s", f.Active(), env.pristine())
			}
			// Apply, revert, apply again: the first expiry must not end the second.
			_ = f.Apply(ctx, env)
			_ = f.Revert(ctx, env)
			_ = f.Apply(ctx, env)
			env.mu.Lock()
			first := env.pending[0]
			env.pending = env.pending[1:]
			env.mu.Unlock()
			first()
			if !f.Active() {
				t.Error("a stale expiry reverted the new application")
			}
			env.fire()
			if f.Active() || env.pristine() != "" {
				t.Errorf("after the real expiry: active %v, env %s", f.Active(), env.pristine())
			}
		})
	}
}

// A knob patch that fails part-way leaves nothing applied.
func TestKnobApplyFailureRollsBack(t *testing.T) {
	env := newFakeEnv(3)
	env.failPatch[2] = true
	f := NewModelLatency()
	err := f.Apply(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "node 2") {
		t.Fatalf("Apply = %v, want an error naming node 2", err)
	}
	if f.Active() {
		t.Error("active after a failed Apply")
	}
	if d := env.pristine(); d != "" {
		t.Errorf("not rolled back: %s", d)
	}
}

// A revert that fails keeps the fault active so it can be retried.
func TestRevertFailureRetries(t *testing.T) {
	env := newFakeEnv(2)
	f := NewModelSlots()
	ctx := context.Background()
	if err := f.Apply(ctx, env); err != nil {
		t.Fatal(err)
	}
	env.failPatch[1] = true
	if err := f.Revert(ctx, env); err == nil {
		t.Fatal("Revert succeeded with node 1 failing")
	}
	if !f.Active() {
		t.Error("inactive after a failed Revert")
	}
	env.failPatch[1] = false
	if err := f.Revert(ctx, env); err != nil || f.Active() || env.pristine() != "" {
		t.Errorf("retry: %v active=%v env %s", err, f.Active(), env.pristine())
	}
}

func TestNodeOutOfRange(t *testing.T) {
	env := newFakeEnv(2)
	for _, name := range []string{"model_latency", "model_slots", "node_hang", "model_errors", "node_kill"} {
		f, err := Default.New(name, json.RawMessage(`{"node":5}`))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err = f.Apply(context.Background(), env)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Field != "node" {
			t.Errorf("%s on node 5 of 2: %v", name, err)
		}
	}
	if env.pristine() != "" || env.callCount() != 0 {
		t.Errorf("env touched: %v", env.calls)
	}
}

func TestDurationJSON(t *testing.T) {
	var d Duration
	if err := json.Unmarshal([]byte(`"1m30s"`), &d); err != nil || d.D() != 90*time.Second {
		t.Errorf("1m30s: %v %v", d.D(), err)
	}
	for _, bad := range []string{`10`, `"ten"`, `true`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	b, _ := json.Marshal(Duration(1500 * time.Millisecond))
	if string(b) != `"1.5s"` {
		t.Errorf("marshal: %s", b)
	}
}

func TestCheckTargets(t *testing.T) {
	topo := Topology{Nodes: 3, RedisMasters: 3}
	cases := []struct {
		fault, params string
		topo          Topology
		field         string // "" when the step fits
	}{
		{"node_kill", `{"node":2}`, topo, ""},
		{"node_kill", `{"node":-1}`, topo, ""},
		{"node_kill", `{"node":7}`, topo, "node"},
		{"node_kill", `{"node":3}`, topo, "node"},
		{"model_latency", `{"node":5}`, topo, "node"},
		{"model_slots", `{"node":5}`, topo, "node"},
		{"node_hang", `{"node":5}`, topo, "node"},
		{"model_errors", `{"node":5}`, topo, "node"},
		{"model_errors", `{"node":1}`, topo, ""},
		{"gc_pressure", `{"target":"node","node":5}`, topo, "node"},
		{"gc_pressure", `{"target":"node","node":2}`, topo, ""},
		{"gc_pressure", `{"target":"gateway","node":5}`, topo, ""}, // node unused
		{"redis_master_kill", `{"master":2}`, topo, ""},
		{"redis_master_kill", `{"master":-1}`, topo, ""},
		{"redis_master_kill", `{"master":3}`, topo, "master"},
		{"redis_master_kill", `{"master":3}`, Topology{Nodes: 3}, ""}, // no cluster declared: left to Apply
		{"traffic_spike", `{"factor":2}`, Topology{Nodes: 1}, ""},
	}
	for _, c := range cases {
		t.Run(c.fault+c.params, func(t *testing.T) {
			f, err := Default.New(c.fault, json.RawMessage(c.params))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckTargets(f, c.topo)
			if c.field == "" {
				if err != nil {
					t.Fatalf("CheckTargets: %v", err)
				}
				return
			}
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Field != c.field || pe.Fault != c.fault {
				t.Fatalf("CheckTargets = %v, want a ParamError on %s", err, c.field)
			}
		})
	}
}

// TestEveryNodeParamIsChecked: a catalogue fault with a node parameter
// must be checked before the run, or a step naming a missing node fails
// only when it is due.
func TestEveryNodeParamIsChecked(t *testing.T) {
	for _, name := range Default.Names() {
		f, err := Default.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(f)
		var params map[string]any
		if err := json.Unmarshal(b, &params); err != nil {
			t.Fatal(err)
		}
		if _, ok := params["node"]; !ok {
			continue
		}
		params["node"] = 9
		if _, ok := params["target"]; ok {
			params["target"] = "node"
		}
		raw, _ := json.Marshal(params)
		f, err = Default.New(name, raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := CheckTargets(f, Topology{Nodes: 2}); err == nil {
			t.Errorf("%s: node 9 of 2 passes CheckTargets", name)
		}
	}
}

// TestParamTypeErrorsNameTheParameter: a parameter of the wrong type is a
// *ParamError naming it, in JSON's words; before, only `node` was named
// and the rest read "parameters: json: cannot unmarshal string into Go
// struct field ModelLatency.multiplier of type float64".
func TestParamTypeErrorsNameTheParameter(t *testing.T) {
	tests := []struct {
		fault, params, field, msg string
	}{
		{"model_latency", `{"multiplier":"x"}`, "multiplier", "must be a number, got a JSON string"},
		{"model_slots", `{"slots":2.5}`, "slots", "must be an integer, got the number 2.5"},
		{"node_kill", `{"for":"soon"}`, "for", `duration "soon": time: invalid duration "soon"`},
		{"node_kill", `{"node":0,"for":3}`, "for", `duration must be a string like "10s", got 3`},
		{"gc_pressure", `{"target":true}`, "target", "must be a string, got a JSON bool"},
		{"cpu_hog", `{"goroutines":[1]}`, "goroutines", "must be an integer, got a JSON array"},
	}
	for _, tt := range tests {
		_, err := Default.New(tt.fault, json.RawMessage(tt.params))
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Field != tt.field || pe.Msg != tt.msg {
			t.Errorf("%s %s: %v; want a ParamError on %s: %s", tt.fault, tt.params, err, tt.field, tt.msg)
		}
	}
	// Not an object at all: no parameter to name.
	if _, err := Default.New("model_latency", json.RawMessage(`[1]`)); err == nil || !strings.Contains(err.Error(), "parameters") {
		t.Errorf("an array: %v, want an error about the parameters", err)
	}
}
