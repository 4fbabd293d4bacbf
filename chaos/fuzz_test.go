package chaos

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzFaultParams: any parameters for any fault of the catalogue either
// give a fault that validates and whose parameters round-trip through
// JSON (what the lab writes to events and run.json reads back as the same
// fault), or an error naming the fault. It never panics.
func FuzzFaultParams(f *testing.F) {
	for i, name := range catalogue {
		def, err := Default.Get(name)
		if err != nil {
			f.Fatal(err)
		}
		b, err := json.Marshal(def)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	for _, s := range []string{`{"multiplier":2,"node":-1}`, `{"for":"10s"}`, `{"for":"-1s"}`, `{"NODE":1}`, `{} {}`, `null`, `[1]`, `{"ballast_mb":1e30}`, `{"duty":0.5,"goroutines":2}`} {
		f.Add(uint8(1), []byte(s))
		f.Add(uint8(5), []byte(s))
	}
	// The node parameter's list form, good and bad, on node_kill (0),
	// model_latency (1), gc_pressure (2) and model_slots (6).
	for _, s := range []string{`{"node":[0,2]}`, `{"node":[2,0,1],"for":"1s"}`, `{"node":[1]}`, `{"node":[]}`, `{"node":[-1]}`, `{"node":[0,-1]}`, `{"node":[0,0]}`, `{"node":[0.5]}`, `{"node":[[0]]}`, `{"target":"node","node":[1,2]}`} {
		for _, which := range []uint8{0, 1, 2, 6} {
			f.Add(which, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, params []byte) {
		names := Default.Names()
		name := names[int(which)%len(names)]
		fl, err := Default.New(name, params)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the fault %s", err, name)
			}
			return
		}
		if err := fl.Validate(); err != nil {
			t.Fatalf("accepted parameters that do not validate: %v", err)
		}
		b, err := json.Marshal(fl)
		if err != nil {
			t.Fatalf("accepted parameters do not write as JSON: %v", err)
		}
		back, err := Default.New(name, b)
		if err != nil {
			t.Fatalf("its own JSON %s is refused: %v", b, err)
		}
		if again, _ := json.Marshal(back); !bytes.Equal(again, b) || back.Detail() != fl.Detail() {
			t.Fatalf("round trip %s → %s (%q → %q)", b, again, fl.Detail(), back.Detail())
		}
	})
}
