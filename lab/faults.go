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
