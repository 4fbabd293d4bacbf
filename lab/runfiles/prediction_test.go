package runfiles

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
)

// counts is a sample whose ended requests are the outcomes given (offered
// is more: some are in flight).
func counts(offered, ok, timeout, shedQ, shedO, errs uint64, p0Fin, p0OK uint64) Sample {
	return Sample{
		OfferedTotal: offered,
		OutcomeTotal: map[string]uint64{
			wire.OutcomeOK.String(): ok, wire.OutcomeTimeout.String(): timeout,
			wire.OutcomeShedQueueFull.String(): shedQ, wire.OutcomeShedOverload.String(): shedO,
			wire.OutcomeError.String(): errs,
		},
		ByPriority: map[string]PrioritySample{wire.PriorityP0: {OfferedTotal: p0Fin + 7, FinishedTotal: p0Fin, OKTotal: p0OK}},
	}
}

// Every prediction metric is measured from a window of two samples; an
// empty window is not a measurement.
func TestMeasurePrediction(t *testing.T) {
	from := counts(1000, 400, 100, 200, 100, 0, 50, 40)
	from.Elapsed, from.OOMKills = 10, 1
	to := counts(3000, 1400, 300, 700, 300, 100, 150, 139)
	to.Elapsed, to.OOMKills = 20, 3
	want := map[string]float64{
		"p0_success_rate": 99,  // (139−40)/(150−50)
		"p1_success_rate": -1,  // nothing offered: no measurement
		"success_rate":    50,  // 1000/2000
		"goodput_rps":     100, // 1000 ok in 10 s
		"timeout_rate":    10,  // 200/2000
		"shed_rate":       35,  // (500+200)/2000
		"error_rate":      5,   // 100/2000
		"oom_kills":       2,
	}
	for _, name := range experiment.PredictionMetricNames() {
		w, listed := want[name]
		if !listed {
			w = -1
			if name != "p2_success_rate" {
				t.Errorf("metric %s has no test case", name)
			}
		}
		got, ok := MeasurePrediction(name, from, to)
		if w < 0 {
			if ok {
				t.Errorf("%s: measured %v over a window with nothing offered", name, got)
			}
			continue
		}
		if !ok || math.Abs(got-w) > 1e-9 {
			t.Errorf("%s = %v (ok %v), want %v", name, got, ok, w)
		}
	}
	// From the run's start (a zero Sample).
	if got, ok := MeasurePrediction("goodput_rps", Sample{}, to); !ok || got != 70 {
		t.Errorf("goodput from the start = %v %v, want 70", got, ok)
	}
	if _, ok := MeasurePrediction("goodput_rps", to, to); ok {
		t.Error("an empty window measured")
	}
	if _, ok := MeasurePrediction("happiness", from, to); ok {
		t.Error("an unknown metric measured")
	}
}

// The events of a run pair into predictions: answered, skipped, measured
// without an answer, and the last answer of a step wins.
func TestReadPredictions(t *testing.T) {
	evs, err := ReadEvents(filepath.Join("testdata", "report", "03"))
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, Event{Kind: EventPrediction, Fields: PredictionFields(5, "timeout_rate", "late?", 12.5, false)})
	evs = append(evs, Event{Kind: EventPrediction, Fields: PredictionFields(5, "timeout_rate", "late?", 20, false)})
	ps := ReadPredictions(evs)
	if len(ps) != 4 {
		t.Fatalf("%d predictions: %+v", len(ps), ps)
	}
	p0 := ps[0]
	if p0.Step != 1 || *p0.Predicted != 60 || *p0.Measured != 100 || p0.ExplainStep != 4 || p0.ToS != 16.7 || p0.Unit != "%" {
		t.Errorf("step 1: %+v", p0)
	}
	if !ps[1].Skipped || ps[1].Predicted != nil || *ps[1].Measured != 6.417 {
		t.Errorf("step 2: %+v", ps[1])
	}
	if ps[2].Predicted != nil || ps[2].Skipped || ps[2].FromS != 3.3 {
		t.Errorf("step 3: %+v", ps[2])
	}
	if ps[3].Measured != nil || *ps[3].Predicted != 20 {
		t.Errorf("step 5: %+v", ps[3])
	}
	for _, tt := range []struct {
		p    Prediction
		want string
	}{
		{ps[0], "step 1 · P0 success %?  predicted 60 % · measured 100 % (P0 success, 0–16.7 s)"},
		{ps[1], "step 2 · P2 success %?  skipped · measured 6.42 % (P2 success, 0–16.7 s)"},
		{ps[2], "step 3 · goodput  no prediction · measured 201 req/s (goodput, 3.3–16.7 s)"},
		{ps[3], "step 5 · late?  predicted 20 % · not measured (the run ended first)"},
	} {
		if got := tt.p.PredictionLine(); got != tt.want {
			t.Errorf("line\n got %q\nwant %q", got, tt.want)
		}
	}
}

func TestMeasuredFieldsRoundTrip(t *testing.T) {
	v, pr := 99.5, 80.0
	in := Prediction{Step: 2, Metric: "p0_success_rate", Unit: "%", Measured: &v, Predicted: &pr, FromS: 1.23456, ToS: 9, ExplainStep: 3}
	got := ReadPredictions([]Event{{Kind: EventPredictionMeasured, Fields: MeasuredFields(in)}})
	if len(got) != 1 || *got[0].Measured != 99.5 || *got[0].Predicted != 80 || got[0].FromS != 1.235 || got[0].ExplainStep != 3 {
		t.Fatalf("%+v", got)
	}
}
