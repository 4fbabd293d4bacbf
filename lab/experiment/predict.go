package experiment

import (
	"fmt"
	"strings"
)

// Predict is what a predict step asks the room for: one number about one
// measured quantity. The lab measures that quantity from From (default:
// the step's own time) until the next explain step shows (or the run
// ends), and the dashboard, events.jsonl and the reports put the number
// people typed beside it.
//
//	narration:
//	  - at: 0s
//	    kind: predict
//	    text: "Offered load will reach 10× capacity. What share of P0 will succeed?"
//	    predict: {metric: p0_success_rate}        # question and unit follow from the metric
//	  - at: 50s
//	    kind: explain                             # measured here: P0 success from 0 s to 50 s
//	    text: "…"
type Predict struct {
	// Metric is one of PredictionMetrics; required.
	Metric string `yaml:"metric" json:"metric"`
	// Question is the short prompt the dashboard shows ("P0 success %?");
	// default: the metric's own question.
	Question string `yaml:"question" json:"question,omitempty"`
	// From is when the measurement starts, on the lesson's clock; default
	// (zero): the step's own time. It may not be after the explain step
	// that ends the measurement.
	From Duration `yaml:"from" json:"from,omitempty"`
	// To, when set, ends the measurement earlier than the explain step
	// (before a fault that would blur it); the explain step still shows it.
	To Duration `yaml:"to" json:"to,omitempty"`
}

// PredictionMetric describes one quantity a prediction may be about.
type PredictionMetric struct {
	Label    string // what it is, for a report line: "P0 success"
	Unit     string // "%", "req/s" or "" (a count)
	Question string // the default prompt
}

// PredictionMetrics are the quantities a predict step may ask about. Each
// is measured from two cumulative counters of the samples (the window's
// first and last), so the dashboard, `levee run` and the reports measure
// it the same way (runfiles.MeasurePrediction). Rates are in percent (the
// number people type) of the requests that ended in the window.
var PredictionMetrics = map[string]PredictionMetric{
	"p0_success_rate": {Label: "P0 success", Unit: "%", Question: "P0 success %?"},
	"p1_success_rate": {Label: "P1 success", Unit: "%", Question: "P1 success %?"},
	"p2_success_rate": {Label: "P2 success", Unit: "%", Question: "P2 success %?"},
	"success_rate":    {Label: "success", Unit: "%", Question: "success %, all requests?"},
	"goodput_rps":     {Label: "goodput", Unit: "req/s", Question: "goodput, ok req/s?"},
	"timeout_rate":    {Label: "timeouts", Unit: "%", Question: "% of requests timing out?"},
	"shed_rate":       {Label: "shed", Unit: "%", Question: "% of requests shed?"},
	"error_rate":      {Label: "errors", Unit: "%", Question: "% of requests failing with an error?"},
	"oom_kills":       {Label: "gateway OOM kills", Unit: "", Question: "gateway OOM kills?"},
}

// PredictionMetricNames lists PredictionMetrics' names, sorted.
func PredictionMetricNames() []string { return sortedKeys(PredictionMetrics) }

// AskedQuestion is the prompt of p: its own question or its metric's.
func (p *Predict) AskedQuestion() string {
	if p.Question != "" {
		return p.Question
	}
	return PredictionMetrics[p.Metric].Question
}

// MeasuredAt is the index of the narration step that ends the measurement
// of predict step i: the first explain step after it, or -1 when none
// follows (the run's end ends it).
func (e *Experiment) MeasuredAt(i int) int {
	for j := i + 1; j < len(e.Narration); j++ {
		if e.Narration[j].Kind == NarrationExplain {
			return j
		}
	}
	return -1
}

// MeasureFrom is when the measurement of predict step i starts.
func (e *Experiment) MeasureFrom(i int) Duration {
	s := e.Narration[i]
	if s.Predict != nil && s.Predict.From != 0 {
		return s.Predict.From
	}
	return s.At
}

// validatePredict checks the predict block of narration step i.
func (e *Experiment) validatePredict(p *problems, i int) {
	s := e.Narration[i]
	if s.Predict == nil {
		return
	}
	path := fmt.Sprintf("narration.%d.predict", i)
	if s.Kind != NarrationPredict {
		p.add(path, "only a %s step asks for a prediction (this one is %q)", NarrationPredict, s.Kind)
	}
	if _, ok := PredictionMetrics[s.Predict.Metric]; !ok {
		p.add(path+".metric", "%q: want one of %s", s.Predict.Metric, strings.Join(PredictionMetricNames(), ", "))
	}
	if len([]rune(s.Predict.Question)) > 60 {
		p.add(path+".question", "%d characters: keep it under 60 (it is a prompt; the step's text says the rest)", len([]rune(s.Predict.Question)))
	}
	// A window reaching past the end of the run (one that lasts forever is
	// not checked) would never be measured as written.
	afterEnd := func(d Duration) bool { return e.Duration != Forever && d > e.Duration }
	from := s.Predict.From
	switch j := e.MeasuredAt(i); {
	case from == Forever || from < 0:
		p.add(path+".from", "%s: want a time of the lesson", from)
	case afterEnd(from):
		p.add(path+".from", "%s is after the end of the run (%s): the measurement would never start", from, e.Duration)
	case j >= 0 && from > e.Narration[j].At:
		p.add(path+".from", "%s is after the explain step that ends the measurement (%s, step %d)", from, e.Narration[j].At, j+1)
	}
	to := s.Predict.To
	switch {
	case to == 0:
	case to == Forever || to <= e.MeasureFrom(i):
		p.add(path+".to", "%s: want a time after the measurement starts (%s)", to, e.MeasureFrom(i))
	case afterEnd(to):
		p.add(path+".to", "%s is after the end of the run (%s): the measurement would never end there", to, e.Duration)
	case e.MeasuredAt(i) >= 0 && to > e.Narration[e.MeasuredAt(i)].At:
		p.add(path+".to", "%s is after the explain step that shows the measurement (%s)", to, e.Narration[e.MeasuredAt(i)].At)
	}
}

// clonePredicts copies every step's predict block.
func clonePredicts(steps []Step) {
	for i := range steps {
		if p := steps[i].Predict; p != nil {
			c := *p
			steps[i].Predict = &c
		}
	}
}
