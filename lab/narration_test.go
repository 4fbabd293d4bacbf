package lab

import (
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

func p0Sample(elapsed float64, offered, ok uint64) *runfiles.Sample {
	return &runfiles.Sample{
		Elapsed: elapsed, OfferedTotal: offered,
		OutcomeTotal: map[string]uint64{wire.OutcomeOK.String(): ok},
		ByPriority:   map[string]runfiles.PrioritySample{wire.PriorityP0: {OfferedTotal: offered, FinishedTotal: offered, OKTotal: ok}},
	}
}

// A predict step asks for its number; the answer is kept; the explain step
// measures the window (from the step's `from`) and shows the answer beside
// it; a step measured at the run's end gets explain step 0.
func TestPredictionsMeasuredAtTheExplainStep(t *testing.T) {
	e, err := experiment.ParseExperiment([]byte(`
name: p
duration: 60s
narration:
  - {at: 0s, kind: predict, text: a, predict: {metric: p0_success_rate}}
  - {at: 5s, kind: predict, text: b, predict: {metric: goodput_rps, from: 10s, to: 15s}}
  - {at: 20s, kind: explain, text: c}
  - {at: 30s, kind: predict, text: d, predict: {metric: timeout_rate}}
  - {at: 40s, kind: watch, text: e}
`))
	if err != nil {
		t.Fatal(err)
	}
	l, fc := fakeClockLab(e)
	player := e.Timeline().Play(nil)
	step := func(d time.Duration, s *runfiles.Sample) {
		t.Helper()
		fc.Advance(d)
		if s != nil {
			l.latest.Store(s)
		}
		l.due(fc.Now(), player)
	}

	step(0, nil)
	ls := l.Lesson()
	if ls.Ask == nil || ls.Ask.Question != "P0 success %?" || ls.Ask.Unit != "%" || ls.Ask.Answered {
		t.Fatalf("step 1 asks %+v", ls.Ask)
	}
	if err := l.Predict(PredictionAnswer{Step: 1, Value: 60}); err != nil {
		t.Fatal(err)
	}
	if err := l.Predict(PredictionAnswer{Step: 3, Value: 1}); err == nil {
		t.Error("an answer to an explain step was accepted")
	}
	if ls := l.Lesson(); !ls.Ask.Answered || ls.Ask.Value != 60 {
		t.Errorf("after the answer: %+v", ls.Ask)
	}
	step(5*time.Second, p0Sample(5, 500, 500))
	if err := l.Predict(PredictionAnswer{Step: 2, Skipped: true}); err != nil {
		t.Fatal(err)
	}
	step(5*time.Second, p0Sample(10, 1000, 900))  // step 2's window opens here
	step(5*time.Second, p0Sample(15, 2000, 1400)) // and ends here (to)
	step(5*time.Second, p0Sample(20, 3000, 2100))
	ls = l.Lesson()
	if ls.Step != 3 || len(ls.Results) != 2 {
		t.Fatalf("explain step: %+v", ls)
	}
	r1, r2 := ls.Results[0], ls.Results[1]
	if *r1.Measured != 70 || *r1.Predicted != 60 || r1.FromS != 0 || r1.ToS != 20 || r1.ExplainStep != 3 {
		t.Errorf("P0 result %+v", r1)
	}
	if *r2.Measured != 100 || r2.Predicted != nil || !r2.Skipped || r2.FromS != 10 || r2.ToS != 15 || r2.ExplainStep != 3 {
		t.Errorf("goodput result %+v (500 ok in 5 s)", r2)
	}
	// Step 4 is never followed by an explain step: the run's end measures it.
	step(10*time.Second, p0Sample(30, 4000, 2800))
	l.NextStep()
	l.latest.Store(p0Sample(45, 5000, 3500))
	l.measureRemaining()
	l.narr.mu.Lock()
	w := l.narr.windows[4]
	l.narr.mu.Unlock()
	if !w.done || w.result.ExplainStep != 0 || w.result.ToS != 45 || *w.result.Measured != 0 {
		t.Errorf("end-of-run measurement %+v", w.result)
	}
}
