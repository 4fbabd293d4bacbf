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

// thresholdJSON is ThresholdResult as summary.json holds it.
type thresholdJSON struct {
	Expr  string   `json:"expr"`
	Value *float64 `json:"value"`
	// Never marks a null value that was +Inf: a time that never came (a
	// limit that never settled, goodput that never recovered), which a
	// report prints as "never", not "n/a".
	Never bool   `json:"never,omitempty"`
	Pass  bool   `json:"pass"`
	Note  string `json:"note,omitempty"`
}

// MarshalJSON writes a value that is not finite as null: +Inf (a limit
// that never settled) with "never": true, NaN (a metric that does not
// apply) without.
func (r ThresholdResult) MarshalJSON() ([]byte, error) {
	p := thresholdJSON{Expr: r.Expr, Pass: r.Pass, Note: r.Note, Never: math.IsInf(r.Value, 1)}
	if !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0) {
		v := r.Value
		p.Value = &v
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads null as NaN, or +Inf with "never": true.
func (r *ThresholdResult) UnmarshalJSON(b []byte) error {
	var p thresholdJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = ThresholdResult{Expr: p.Expr, Pass: p.Pass, Note: p.Note, Value: math.NaN()}
	switch {
	case p.Value != nil:
		r.Value = *p.Value
	case p.Never:
		r.Value = math.Inf(1)
	}
	return nil
}
