package lab

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

// stepParams encodes a timeline step's parameters. When the step has its
// own `for`, a fault that also takes a "for" parameter (node_kill,
// traffic_spike, redis_outage) gets "for": "0s" unless the step set one, so
// that the step's `for` — on the experiment's pausable clock — is the one
// that reverts it, not the fault's default.
func stepParams(f FaultStep) (json.RawMessage, error) {
	p := f.Params
	if f.For > 0 {
		if _, set := p["for"]; !set {
			withFor := cloneMap(p)
			if withFor == nil {
				withFor = map[string]any{}
			}
			withFor["for"] = "0s"
			if raw, err := json.Marshal(withFor); err == nil {
				if _, err := chaos.Default.New(f.Fault, raw); err == nil {
					p = withFor
				}
			}
		}
	}
	return faultParams(p)
}

// validateFaultStep checks the step's fault and parameters against the
// catalogue.
func validateFaultStep(f FaultStep) error {
	raw, err := faultParams(f.Params)
	if err != nil {
		return err
	}
	_, err = chaos.Default.New(f.Fault, raw)
	return err
}

// scaleForParam scales a "for" duration parameter (text) by factor.
func scaleForParam(p map[string]any, factor float64) {
	s, ok := p["for"].(string)
	if !ok {
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return
	}
	p["for"] = time.Duration(float64(d) * factor).String()
}
