package experiment

import (
	"encoding/json"
	"fmt"

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
