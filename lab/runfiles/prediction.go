package runfiles

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
)

// Predictions in events.jsonl. Two event kinds carry them, both keyed by
// the 1-based narration step that asked (fields.step):
//
//	{"kind":"prediction","detail":"P0 success %? 60 %",
//	 "fields":{"step":1,"metric":"p0_success_rate","unit":"%","question":"P0 success %?","value":60}}
//	{"kind":"prediction","detail":"P0 success %? skipped",
//	 "fields":{"step":1,"metric":"p0_success_rate","unit":"%","question":"P0 success %?","skipped":true}}
//	{"kind":"prediction_measured","detail":"P0 success 99.9 % (0.0–50.0 s)",
//	 "fields":{"step":1,"explain_step":4,"metric":"p0_success_rate","unit":"%","question":"P0 success %?",
//	           "value":99.9,"from_s":0,"to_s":50.02,"predicted":60}}
//
// A prediction is what the room typed at the predict step (the last answer
// counts); prediction_measured is the lab's measurement when the explain
// step that ends it showed (explain_step; 0 at the run's end), with the
// prediction made by then, if any. Values are in unit: percent for rates.
// ReadPredictions pairs them; a run without either has none. The kinds
// are EventPrediction and EventPredictionMeasured.

// Prediction is one predict step of a run: the number the room gave and
// the value the lab measured. Either may be missing.
type Prediction struct {
	Step     int    `json:"step"` // the predict step, 1-based
	Metric   string `json:"metric"`
	Unit     string `json:"unit"`
	Question string `json:"question,omitempty"`
	// Predicted is the number typed in; nil when skipped or never answered.
	Predicted *float64 `json:"predicted,omitempty"`
	Skipped   bool     `json:"skipped,omitempty"`
	// Measured is the lab's value over [FromS, ToS] (seconds of the run);
	// nil when the run ended before the measurement or nothing was offered.
	Measured    *float64 `json:"measured,omitempty"`
	FromS       float64  `json:"from_s,omitempty"`
	ToS         float64  `json:"to_s,omitempty"`
	ExplainStep int      `json:"explain_step,omitempty"` // 0: measured at the run's end
}

// Label is what the prediction is about, for people: "P0 success".
func (p Prediction) Label() string {
	if m, ok := experiment.PredictionMetrics[p.Metric]; ok {
		return m.Label
	}
	return p.Metric
}

// PredictionFields is the fields map of a prediction event.
func PredictionFields(step int, metric, question string, value float64, skipped bool) map[string]any {
	f := map[string]any{"step": step, "metric": metric, "unit": experiment.PredictionMetrics[metric].Unit, "question": question}
	if skipped {
		f["skipped"] = true
	} else {
		f["value"] = value
	}
	return f
}

// MeasuredFields is the fields map of a prediction_measured event.
func MeasuredFields(p Prediction) map[string]any {
	f := map[string]any{"step": p.Step, "explain_step": p.ExplainStep, "metric": p.Metric, "unit": p.Unit,
		"question": p.Question, "from_s": round(p.FromS, 3), "to_s": round(p.ToS, 3)}
	if p.Measured != nil {
		f["value"] = *p.Measured
	}
	if p.Predicted != nil {
		f["predicted"] = *p.Predicted
	}
	return f
}

// ReadPredictions pairs the prediction events of a run, in step order.
func ReadPredictions(events []Event) []Prediction {
	by := map[int]*Prediction{}
	get := func(f map[string]any) *Prediction {
		step := intField(f, "step")
		p := by[step]
		if p == nil {
			p = &Prediction{Step: step}
			by[step] = p
		}
		p.Metric, p.Unit = strField(f, "metric"), strField(f, "unit")
		return p
	}
	for _, ev := range events {
		switch ev.Kind {
		case EventPrediction:
			p := get(ev.Fields)
			p.Question = strField(ev.Fields, "question")
			p.Skipped, _ = ev.Fields["skipped"].(bool)
			p.Predicted = floatField(ev.Fields, "value")
		case EventPredictionMeasured:
			p := get(ev.Fields)
			if q := strField(ev.Fields, "question"); q != "" && p.Question == "" {
				p.Question = q
			}
			p.Measured = floatField(ev.Fields, "value")
			p.FromS, p.ToS = deref(floatField(ev.Fields, "from_s")), deref(floatField(ev.Fields, "to_s"))
			p.ExplainStep = intField(ev.Fields, "explain_step")
			if p.Predicted == nil {
				p.Predicted = floatField(ev.Fields, "predicted")
			}
		}
	}
	out := make([]Prediction, 0, len(by))
	for _, p := range by {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out
}

func strField(f map[string]any, k string) string { s, _ := f[k].(string); return s }

func floatField(f map[string]any, k string) *float64 {
	switch v := f[k].(type) {
	case float64:
		return &v
	case int:
		x := float64(v)
		return &x
	}
	return nil
}

func intField(f map[string]any, k string) int { return int(deref(floatField(f, k))) }

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// MeasurePrediction measures metric (experiment.PredictionMetrics) over the
// window between two samples of one run, from their cumulative counters:
// rates in percent of the requests that ended in the window (so a rate
// over a part of the run never reads above 100 %; over a whole finished
// run, ended = offered), goodput as ok per second. from may be the zero
// Sample (the run's start). ok is false when the window is empty (nothing
// ended, no time passed) or the metric is unknown.
func MeasurePrediction(metric string, from, to Sample) (v float64, ok bool) {
	outcome := func(o wire.Outcome) float64 {
		return float64(to.OutcomeTotal[o.String()]) - float64(from.OutcomeTotal[o.String()])
	}
	ended := 0.0
	for _, o := range wire.Outcomes() {
		ended += outcome(o)
	}
	percent := func(n, d float64) (float64, bool) {
		if d <= 0 {
			return 0, false
		}
		return round(100*n/d, 3), true
	}
	switch metric {
	case "p0_success_rate", "p1_success_rate", "p2_success_rate":
		p := strings.ToUpper(metric[:2])
		a, b := from.ByPriority[p], to.ByPriority[p]
		return percent(float64(b.OKTotal)-float64(a.OKTotal), float64(b.FinishedTotal)-float64(a.FinishedTotal))
	case "success_rate":
		return percent(outcome(wire.OutcomeOK), ended)
	case "goodput_rps":
		dt := to.Elapsed - from.Elapsed
		if dt <= 0 {
			return 0, false
		}
		return round(outcome(wire.OutcomeOK)/dt, 3), true
	case "timeout_rate":
		return percent(outcome(wire.OutcomeTimeout), ended)
	case "error_rate":
		return percent(outcome(wire.OutcomeError), ended)
	case "shed_rate":
		shed := 0.0
		for _, o := range wire.Outcomes() {
			if _, isShed := o.ShedReason(); isShed {
				shed += outcome(o)
			}
		}
		return percent(shed, ended)
	case "oom_kills":
		return float64(to.OOMKills - from.OOMKills), true
	}
	return math.NaN(), false
}

// FormatPredictionValue prints v in unit for people: "99.9 %", "201 req/s".
func FormatPredictionValue(v float64, unit string) string {
	var s string
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		s = fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		s = fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		s = fmt.Sprintf("%.1f", v)
	default:
		s = fmt.Sprintf("%.2f", v)
	}
	if unit == "" {
		return s
	}
	return s + " " + unit
}

// PredictionLine is one prediction for a report: "P0 success %?
// predicted 60 %, measured 99.9 % (0–50 s)".
func (p Prediction) PredictionLine() string {
	q := p.Question
	if q == "" {
		q = p.Label()
	}
	pred := "no prediction"
	switch {
	case p.Predicted != nil:
		pred = "predicted " + FormatPredictionValue(*p.Predicted, p.Unit)
	case p.Skipped:
		pred = "skipped"
	}
	meas := "not measured (the run ended first)"
	if p.Measured != nil {
		meas = fmt.Sprintf("measured %s (%s, %s)", FormatPredictionValue(*p.Measured, p.Unit), p.Label(), FormatWindow(p.FromS, p.ToS))
	}
	return fmt.Sprintf("step %d · %s  %s · %s", p.Step, q, pred, meas)
}

// FormatWindow prints a measurement window of a run, in seconds from its
// start, as the reports print times: "0–16.5 s" (tenths, trailing zeros
// dropped), or "2:05–4:10" when it ends two minutes or more in. Whole
// seconds said "7–17 s" for 6.5–17.4 s, beside narration at 6.7 s.
func FormatWindow(from, to float64) string {
	if to < 120 {
		tenths := func(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }
		return tenths(from) + "–" + tenths(to) + " s"
	}
	mss := func(s float64) string {
		t := int(math.Round(s))
		return fmt.Sprintf("%d:%02d", t/60, t%60)
	}
	return mss(from) + "–" + mss(to)
}
