package experiment

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/levee-lab/levee/chaos"
)

// validateFaultName reports a fault the catalogue does not have.
func validateFaultName(name string) error {
	_, err := chaos.Default.Get(name)
	return err
}

// faultParams encodes a step's parameters for the chaos registry (nil for
// the fault's defaults).
func faultParams(p map[string]any) (json.RawMessage, error) {
	if len(p) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	return b, nil
}

// validateFaultStep checks the step's fault and parameters against the
// catalogue and the lab's shape (a node or Redis master it names must
// exist in t).
func validateFaultStep(f FaultStep, t chaos.Topology) error {
	raw, err := faultParams(f.Params)
	if err != nil {
		return err
	}
	fault, err := chaos.Default.New(f.Fault, raw)
	if err != nil {
		return err
	}
	return chaos.CheckTargets(fault, t)
}

// topology is the lab's shape as e declares it (e normalized).
func (e *Experiment) topology() chaos.Topology {
	t := chaos.Topology{Nodes: e.Nodes.Count}
	if e.Redis.Kind == RedisCluster {
		t.RedisMasters = max(e.Redis.Masters, DefaultClusterMasters)
	}
	return t
}

// Timeline is the experiment's fault steps as a chaos timeline (steps
// whose parameters do not encode are left to fail when applied; Normalize
// has rejected them already).
func (e *Experiment) Timeline() chaos.Timeline {
	t := make(chaos.Timeline, len(e.Faults))
	for i, f := range e.Faults {
		raw, _ := faultParams(f.Params)
		t[i] = chaos.Step{At: f.At.D(), Fault: f.Fault, Params: raw, For: f.For.D()}
	}
	return t
}

// scaleFaults scales the fault steps' times and "for" parameters by factor
// with the chaos timeline's own scaling. A step whose parameters do not
// scale (Normalize rejects those) is left as it is.
func scaleFaults(fs []FaultStep, factor float64) []FaultStep {
	out := make([]FaultStep, len(fs))
	for i, f := range fs {
		f.Params = cloneMap(f.Params)
		one := (&Experiment{Faults: []FaultStep{f}}).Timeline()
		if scaled, err := one.Scaled(factor); err == nil {
			s := scaled[0]
			f.At, f.For = Duration(s.At), Duration(s.For)
			if _, has := f.Params["for"]; has {
				var p map[string]any
				if json.Unmarshal(s.Params, &p) == nil {
					f.Params["for"] = p["for"]
				}
			}
		}
		out[i] = f
	}
	return out
}

// ownFor is the `for` parameter of step f's fault as its parameters make
// it (the fault's default where they do not set it), and whether the fault
// has one (node_kill, traffic_spike, redis_outage, redis_master_kill).
func ownFor(f FaultStep) (time.Duration, bool) {
	raw, err := faultParams(f.Params)
	if err != nil {
		return 0, false
	}
	fault, err := chaos.Default.New(f.Fault, raw)
	if err != nil {
		return 0, false
	}
	b, err := json.Marshal(fault)
	if err != nil {
		return 0, false
	}
	var p struct {
		For *chaos.Duration `json:"for"`
	}
	if json.Unmarshal(b, &p) != nil || p.For == nil {
		return 0, false
	}
	return p.For.D(), true
}

// foldOwnFor makes the step's `for` the only timer that ends fault step i.
// A fault's own `for` (node_kill's restart after 10 s by default) ends it
// without the lab's revert, so no revert event closes its window in the
// run's summary, and it cut short a step's longer `for`: `{fault:
// node_kill, for: 30s}` brought the node back after 10 s. So: a step with
// a `for` turns the default off (params.for: 0s); a step without one takes
// the fault's own as its `for`; a step that sets both is an error.
func (e *Experiment) foldOwnFor(p *problems, i int) {
	f := &e.Faults[i]
	own, has := ownFor(*f)
	if !has || own == 0 {
		return
	}
	_, explicit := f.Params["for"]
	switch {
	case f.For > 0 && explicit:
		p.add(fmt.Sprintf("faults.%d.params.for", i), "%s beside the step's for (%s): the fault's own timer ends it without the lab's revert; give one, the step's for (with params.for: 0s)", Duration(own), f.For)
		return
	case f.For == 0:
		f.For = Duration(own)
	}
	if f.Params == nil {
		f.Params = map[string]any{}
	}
	f.Params["for"] = "0s"
}
