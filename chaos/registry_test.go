package chaos

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var catalogue = []string{
	"node_kill", "model_latency", "gc_pressure", "cpu_hog", "slow_clients",
	"traffic_spike", "model_slots", "node_hang", "model_errors", "redis_outage",
	"redis_master_kill",
}

func TestDefaultCatalogue(t *testing.T) {
	if got := Default.Names(); !reflect.DeepEqual(got, catalogue) {
		t.Fatalf("Names = %v, want %v", got, catalogue)
	}
	for _, name := range catalogue {
		f, err := Default.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name() != name || f.Description() == "" {
			t.Errorf("%s: name %q, description %q", name, f.Name(), f.Description())
		}
		if err := f.Validate(); err != nil {
			t.Errorf("%s: defaults invalid: %v", name, err)
		}
		if f.Active() {
			t.Errorf("%s: active when new", name)
		}
		// Parameters round-trip through JSON.
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		g, err := Default.New(name, b)
		if err != nil {
			t.Errorf("%s: its own JSON %s is refused: %v", name, b, err)
		} else if g.Detail() != f.Detail() {
			t.Errorf("%s: round trip %q → %q", name, f.Detail(), g.Detail())
		}
	}
}

func TestRegistryNew(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		field        string // ParamError field, or "" for another error
		want         string // substring of the error
	}{
		{"nope", `{}`, "", "unknown fault"},
		{"model_latency", `{"multiplyer":2}`, "", "multiplyer"},
		{"model_latency", `{"multiplier":"x"}`, "", "multiplier"},
		{"model_latency", `{"multiplier":0}`, "multiplier", "(0, 100]"},
		{"model_latency", `{"add_ms":-1}`, "add_ms", ""},
		{"model_latency", `{"node":-2}`, "node", ""},
		{"model_latency", `{} {}`, "", "trailing"},
		{"model_latency", `{"multiplier":2}}`, "", "trailing"},
		{"model_latency", `{"multiplier":2}]`, "", "trailing"},
		{"model_latency", `{"NODE":1}`, "NODE", "names are exact: node"},
		{"model_latency", `{"Multiplier":7}`, "Multiplier", "names are exact: multiplier"},
		{"model_latency", `{"multiplier":2,"multiplier":7}`, "multiplier", "given twice"},
		{"traffic_spike", `{"For":"1s"}`, "For", "names are exact: for"},
		{"model_latency", `[1]`, "", "parameters"},
		{"model_slots", `{"slots":0}`, "slots", ""},
		{"node_hang", `{"hang_rate":1.5}`, "hang_rate", ""},
		{"model_errors", `{"error_rate":0}`, "error_rate", ""},
		{"gc_pressure", `{"target":"redis"}`, "target", ""},
		{"gc_pressure", `{"churn_mb_per_s":0,"ballast_mb":0}`, "churn_mb_per_s", "nothing"},
		{"cpu_hog", `{"goroutines":1000}`, "goroutines", ""},
		{"cpu_hog", `{"duty":0}`, "duty", ""},
		{"cpu_hog", `{"duty":1}`, "duty", "0.95"},
		{"gc_pressure", `{"ballast_mb":5000}`, "ballast_mb", "4096"},
		{"slow_clients", `{"share":0}`, "share", ""},
		{"slow_clients", `{"kbps":-1}`, "kbps", ""},
		{"traffic_spike", `{"factor":0}`, "factor", ""},
		{"traffic_spike", `{"for":"-1s"}`, "for", ""},
		{"traffic_spike", `{"for":10}`, "", "duration"},
		{"node_kill", `{"for":"soon"}`, "", "soon"},
		{"redis_outage", `{"for":"-5s"}`, "for", ""},
		{"redis_master_kill", `{"master":-2}`, "master", "-1"},
		{"redis_master_kill", `{"for":"-1s"}`, "for", ""},
	} {
		t.Run(tc.name+tc.params, func(t *testing.T) {
			f, err := Default.New(tc.name, json.RawMessage(tc.params))
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			var pe *ParamError
			if tc.field != "" && (!errors.As(err, &pe) || pe.Field != tc.field) {
				t.Errorf("error %v does not name field %q", err, tc.field)
			}
		})
	}
	// Empty and null parameters give the defaults.
	for _, p := range []string{"", "null", "  "} {
		f, err := Default.New("model_latency", json.RawMessage(p))
		if err != nil || f.(*ModelLatency).Multiplier != 3 {
			t.Errorf("params %q: %v %+v", p, err, f)
		}
	}
	// Parameters override only what they name.
	f, err := Default.New("gc_pressure", json.RawMessage(`{"ballast_mb":10}`))
	if err != nil {
		t.Fatal(err)
	}
	if g := f.(*GCPressure); g.BallastMB != 10 || g.ChurnMBPerS != 200 || g.Target != "gateway" {
		t.Errorf("partial params: %+v", g)
	}
}

func TestRegister(t *testing.T) {
	r := NewRegistry()
	if err := r.Register(nil); err == nil {
		t.Error("nil factory accepted")
	}
	if err := r.Register(func() Fault { return NewCPUHog() }); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(func() Fault { return NewCPUHog() }); err == nil {
		t.Error("duplicate accepted")
	}
	if _, err := r.Get("node_kill"); err == nil || !strings.Contains(err.Error(), "cpu_hog") {
		t.Errorf("unknown fault error should list the known ones: %v", err)
	}
}

// LabRedis: the faults that act on a Redis the lab runs, of which shape,
// and no other.
func TestLabRedis(t *testing.T) {
	want := map[string]RedisNeed{"redis_outage": RedisNeedSingle, "redis_master_kill": RedisNeedCluster}
	for _, name := range append(Default.Names(), "nope") {
		if got := Default.LabRedis(name); got != want[name] {
			t.Errorf("LabRedis(%q) = %q, want %q", name, got, want[name])
		}
	}
}
