package htmlreport

import (
	"math"

	"github.com/levee-lab/levee/lab/runfiles"
)

// prediction is one predict step of one run as the page shows it: the
// number the room typed beside the value the lab measured over the step's
// window (runfiles.MeasurePrediction, the same as the dashboard's explain
// step and `levee report`).
type prediction struct {
	Run       int    `json:"run"` // index into page.Runs
	Step      int    `json:"step"`
	Question  string `json:"question"`
	Predicted string `json:"predicted"`        // "60 %", "skipped" or "no prediction"
	Measured  string `json:"measured"`         // "99.9 %" or "not measured"
	Window    string `json:"window,omitempty"` // "6.5–17.4 s", to the tenth like the narration's times
	// Off is measured − predicted in the metric's unit ("+39.9 pp"); empty
	// when either is missing.
	Off string `json:"off,omitempty"`
}

// predictionsOf lists every run's predictions in run and step order and
// writes each one beside its predict step's narration mark.
func predictionsOf(runs []*Run, views []runView) []prediction {
	var out []prediction
	for i, r := range runs {
		for _, p := range readPredictions(r.Events) {
			pv := newPrediction(i, p)
			out = append(out, pv)
			said := pv.Predicted // "skipped", "no prediction"
			if p.Predicted != nil {
				said = "predicted " + said
			}
			for j := range views[i].Narration {
				if views[i].Narration[j].Step == p.Step {
					views[i].Narration[j].Prediction = said + " · measured " + pv.Measured
				}
			}
		}
	}
	return out
}

func newPrediction(run int, p runPrediction) prediction {
	q := p.Question
	if q == "" {
		q = p.Label() + "?"
	}
	pv := prediction{Run: run, Step: p.Step, Question: q, Predicted: "no prediction", Measured: "not measured"}
	switch {
	case p.Predicted != nil:
		pv.Predicted = fmtPredictionValue(*p.Predicted, p.Unit)
	case p.Skipped:
		pv.Predicted = "skipped"
	}
	if p.Measured != nil {
		pv.Measured = fmtPredictionValue(*p.Measured, p.Unit)
		pv.Window = fmtWindow(p.FromS, p.ToS)
	}
	if p.Predicted != nil && p.Measured != nil {
		d := *p.Measured - *p.Predicted
		unit := p.Unit
		if unit == "%" {
			unit = "pp" // a difference of two percentages
		}
		pv.Off = signed(fmtPredictionValue(math.Abs(d), unit), d)
		if d == 0 {
			pv.Off = "="
		}
	}
	return pv
}

// fmtWindow prints a measurement window as the text report does.
func fmtWindow(from, to float64) string { return runfiles.FormatWindow(from, to) }
