package runfiles

import (
	"encoding/json"
	"math"
)

// ThresholdResult is one evaluated threshold in summary.json.
type ThresholdResult struct {
	Expr  string  `json:"expr"`
	Value float64 `json:"value"`
	Pass  bool    `json:"pass"`
	// Note explains a value that is not a plain measurement (for example a
	// limit that never settled), when there is one.
	Note string `json:"note,omitempty"`
}

// MarshalJSON writes a value that is not finite (a limit that never
// settled, a metric that does not apply) as null.
func (r ThresholdResult) MarshalJSON() ([]byte, error) {
	type plain struct {
		Expr  string   `json:"expr"`
		Value *float64 `json:"value"`
		Pass  bool     `json:"pass"`
		Note  string   `json:"note,omitempty"`
	}
	p := plain{Expr: r.Expr, Pass: r.Pass, Note: r.Note}
	if !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0) {
		v := r.Value
		p.Value = &v
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads null as NaN.
func (r *ThresholdResult) UnmarshalJSON(b []byte) error {
	var p struct {
		Expr  string   `json:"expr"`
		Value *float64 `json:"value"`
		Pass  bool     `json:"pass"`
		Note  string   `json:"note"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = ThresholdResult{Expr: p.Expr, Pass: p.Pass, Note: p.Note, Value: math.NaN()}
	if p.Value != nil {
		r.Value = *p.Value
	}
	return nil
}
