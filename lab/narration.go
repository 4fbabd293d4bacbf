package lab

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

// LessonState is where a played experiment's narration stands.
type LessonState struct {
	Title string `json:"title"`
	Step  int    `json:"step"`  // 1-based; 0 when no lesson
	Steps int    `json:"steps"` // total steps
	Kind  string `json:"kind"`  // predict, watch, explain
	Text  string `json:"text"`
	// Ask is the number the current predict step asks the room for; nil
	// when the step asks for none (or is not a predict step).
	Ask *PredictionAsk `json:"ask,omitempty"`
	// Results are the predictions measured when the current explain step
	// showed, each with the room's answer if it gave one.
	Results []runfiles.Prediction `json:"results,omitempty"`
}

// PredictionAsk is a predict step's question and the answer given so far.
type PredictionAsk struct {
	Step     int    `json:"step"` // 1-based
	Metric   string `json:"metric"`
	Unit     string `json:"unit"`
	Question string `json:"question"`
	// Answered is true once Predict recorded a number or a skip.
	Answered bool    `json:"answered"`
	Skipped  bool    `json:"skipped,omitempty"`
	Value    float64 `json:"value,omitempty"`
}

// PredictionAnswer is the room's answer to a predict step: a number in the
// step's unit (percent for rates), or a skip.
type PredictionAnswer struct {
	Step    int // 1-based narration step
	Value   float64
	Skipped bool
}

// narration holds what a lesson's predict steps gathered: the room's
// answers and each step's measurement window. Safe for concurrent use.
type narration struct {
	mu      sync.Mutex
	answers map[int]PredictionAnswer // guarded by mu; by step
	windows map[int]*window          // guarded by mu; by predict step
	// log holds every prediction and measurement event, so that a
	// recording started later carries them too. Guarded by mu.
	log []runfiles.Event
}

// predictionEvent records a prediction event in the log and, when
// recording, in events.jsonl.
func (l *Lab) predictionEvent(kind, detail string, fields map[string]any) {
	ev := l.newEvent(kind, detail, fields)
	l.narr.mu.Lock()
	l.narr.log = append(l.narr.log, ev)
	l.narr.mu.Unlock()
	if c := l.recs.current(); c != nil {
		_ = c.rec.WriteEvent(ev)
	}
}

// history is a copy of the prediction events so far.
func (n *narration) history() []runfiles.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]runfiles.Event(nil), n.log...)
}

// window is one predict step's measurement.
type window struct {
	started bool
	from    runfiles.Sample // the newest sample when the window opened
	done    bool
	result  runfiles.Prediction
}

func (n *narration) init() {
	n.answers = map[int]PredictionAnswer{}
	n.windows = map[int]*window{}
}

// startWindows opens the windows of predict steps whose measurement starts
// by at (the schedule's clock), from the newest sample, and returns the
// steps whose window ends by at (their `to`) while still open.
func (n *narration) startWindows(l *Lab, at time.Duration) (ending []int) {
	e := l.exp
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, s := range e.Narration {
		if s.Predict == nil || e.MeasureFrom(i).D() > at {
			continue
		}
		w := n.windows[i+1]
		if w == nil {
			w = &window{}
			n.windows[i+1] = w
		}
		if !w.started {
			w.started, w.from = true, l.latestSample()
		}
		if to := s.Predict.To.D(); to > 0 && to <= at && !w.done {
			ending = append(ending, i+1)
		}
	}
	return ending
}

// updateWindows opens the windows due by at and ends those whose `to` has
// come, each shown at the explain step that follows it.
func (l *Lab) updateWindows(at time.Duration) {
	for _, step := range l.narr.startWindows(l, at) {
		l.measure(step, l.exp.MeasuredAt(step-1)+1)
	}
}

// latestSample is the newest Sample (the zero Sample, the run's start,
// before the first tick).
func (l *Lab) latestSample() runfiles.Sample {
	if s := l.latest.Load(); s != nil {
		return *s
	}
	return runfiles.Sample{}
}

// showStep shows narration step n (1-based): its event and progress line,
// and at an explain step the measurement of the predictions it ends.
// skipped is how far NextStep moved the schedule's clock to get here.
func (l *Lab) showStep(n int, manual bool, skipped time.Duration) {
	s := l.exp.Narration[n-1]
	fields := map[string]any{"step": n, "kind": s.Kind}
	if manual {
		fields["manual"] = true
		fields["skipped_s"] = round(skipped.Seconds(), 3)
	}
	l.event(runfiles.EventNarration, s.Text, fields)
	l.progress("[%s] %s", s.Kind, s.Text)
	if s.Kind != experiment.NarrationExplain {
		return
	}
	l.updateWindows(s.At.D()) // a jump may land here before the loop's next turn
	for i := range l.exp.Narration[:n-1] {
		if l.exp.Narration[i].Predict != nil && l.exp.MeasuredAt(i) == n-1 {
			l.measure(i+1, n)
		}
	}
}

// measure ends predict step step's window now, at explain step explain (0:
// the run's end), and records the result.
func (l *Lab) measure(step, explain int) {
	spec := l.exp.Narration[step-1].Predict
	to := l.latestSample()
	n := &l.narr
	n.mu.Lock()
	w := n.windows[step]
	if w == nil || !w.started || w.done {
		n.mu.Unlock()
		return
	}
	w.done = true
	p := runfiles.Prediction{
		Step: step, Metric: spec.Metric, Unit: experiment.PredictionMetrics[spec.Metric].Unit,
		Question: spec.AskedQuestion(), FromS: w.from.Elapsed, ToS: to.Elapsed, ExplainStep: explain,
	}
	if v, ok := runfiles.MeasurePrediction(spec.Metric, w.from, to); ok {
		p.Measured = &v
	}
	if a, ok := n.answers[step]; ok {
		p.Skipped = a.Skipped
		if !a.Skipped {
			v := a.Value
			p.Predicted = &v
		}
	}
	w.result = p
	n.mu.Unlock()

	detail := p.Label() + " not measured: nothing offered in the window"
	if p.Measured != nil {
		detail = fmt.Sprintf("%s %s (%.1f–%.1f s)", p.Label(), runfiles.FormatPredictionValue(*p.Measured, p.Unit), p.FromS, p.ToS)
	}
	l.predictionEvent(runfiles.EventPredictionMeasured, detail, runfiles.MeasuredFields(p))
	if p.Predicted != nil {
		detail += ", predicted " + runfiles.FormatPredictionValue(*p.Predicted, p.Unit)
	}
	l.progress("[measured] %s", detail)
}

// measureRemaining ends every window still open (the run ended before the
// explain step that would have ended it).
func (l *Lab) measureRemaining() {
	for i, s := range l.exp.Narration {
		if s.Predict != nil {
			l.measure(i+1, 0)
		}
	}
}

// Predict records the room's answer to a predict step that asks for a
// number. It returns at once; the answer lands in events.jsonl (of a
// recording started later too) and shows beside the measured value at the
// explain step. A later answer to the same step replaces the earlier one.
func (l *Lab) Predict(a PredictionAnswer) error {
	e := l.exp
	if a.Step < 1 || a.Step > len(e.Narration) || e.Narration[a.Step-1].Predict == nil {
		return fmt.Errorf("lab: step %d asks for no prediction", a.Step)
	}
	if !a.Skipped && (math.IsNaN(a.Value) || math.IsInf(a.Value, 0)) {
		return fmt.Errorf("lab: prediction %v is not a number", a.Value)
	}
	if l.isFinishing() {
		return errors.New("lab: the lesson has ended: the prediction was not recorded")
	}
	spec := e.Narration[a.Step-1].Predict
	l.narr.mu.Lock()
	l.narr.answers[a.Step] = a
	l.narr.mu.Unlock()
	q := spec.AskedQuestion()
	detail := q + " skipped"
	if !a.Skipped {
		detail = q + " " + runfiles.FormatPredictionValue(a.Value, experiment.PredictionMetrics[spec.Metric].Unit)
	}
	l.predictionEvent(runfiles.EventPrediction, detail, runfiles.PredictionFields(a.Step, spec.Metric, q, a.Value, a.Skipped))
	return nil
}

// Lesson reports the narration state.
func (l *Lab) Lesson() LessonState {
	l.sched.mu.Lock()
	step := l.sched.step
	l.sched.mu.Unlock()
	st := LessonState{Title: l.exp.Title, Step: step, Steps: len(l.exp.Narration)}
	if step < 1 || step > len(l.exp.Narration) {
		return st
	}
	s := l.exp.Narration[step-1]
	st.Kind, st.Text = s.Kind, s.Text
	n := &l.narr
	n.mu.Lock()
	defer n.mu.Unlock()
	if s.Predict != nil {
		a, answered := n.answers[step]
		st.Ask = &PredictionAsk{
			Step: step, Metric: s.Predict.Metric, Unit: experiment.PredictionMetrics[s.Predict.Metric].Unit,
			Question: s.Predict.AskedQuestion(), Answered: answered, Skipped: a.Skipped, Value: a.Value,
		}
	}
	for i := 1; i < step; i++ {
		w := n.windows[i]
		if w == nil || !w.done || w.result.ExplainStep != step {
			continue
		}
		r := w.result
		if a, ok := n.answers[i]; ok { // an answer given after the measurement
			r.Skipped, r.Predicted = a.Skipped, nil
			if !a.Skipped {
				v := a.Value
				r.Predicted = &v
			}
		}
		st.Results = append(st.Results, r)
	}
	return st
}

// NextStep shows the next narration step now and moves the lesson to its
// time: the schedule's clock jumps forward (never back), so the stages'
// rate and the faults due in between follow at the control loop's next
// turn, in order, and what the room reads matches what it sees.
//
// It moves nothing and returns ErrStopping once the lab is ending (the
// experiment ended, or Stop was called), as SetRate and the other
// controls that change the run do; and it returns an error saying so when
// there is no next step (the run plays no narration, or its last step
// shows already).
func (l *Lab) NextStep() error {
	if l.isEnding() {
		return ErrStopping
	}
	s := l.sched
	now := l.clock.Now()
	s.mu.Lock()
	steps := len(l.exp.Narration)
	if steps == 0 {
		s.mu.Unlock()
		return fmt.Errorf("%w: this run plays no lesson narration", ErrNoNextStep)
	}
	if s.step >= steps {
		s.mu.Unlock()
		return fmt.Errorf("%w: step %d/%d is the last", ErrNoNextStep, s.step, steps)
	}
	n := s.step + 1
	jump := max(0, l.exp.Narration[n-1].At.D()-s.elapsedLocked(now))
	s.skipped += jump
	s.step = n
	s.mu.Unlock()
	if jump > 0 {
		l.progress("skipped %.1f s of the lesson to step %d", jump.Seconds(), n)
	}
	l.showStep(n, true, jump)
	return nil
}
