package lab

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

// controlPeriod is how often the schedule is applied: rate ramps move in
// steps this long, fault and narration times are met within it.
const controlPeriod = 50 * time.Millisecond

// schedule is the experiment's pausable clock and everything that sets the
// target rate: the stages, a manual override, a spike, the traffic_spike
// fault's factor. It also remembers which stage and narration step show.
// All methods are safe for concurrent use.
type schedule struct {
	exp   *experiment.Experiment
	clock clockwork.Clock

	mu sync.Mutex
	// guarded by mu:
	start       time.Time // when load started
	manual      bool      // SetRate override active
	manualRate  float64
	paused      bool
	pausedAt    time.Time     // when the schedule clock stopped
	pausedTotal time.Duration // schedule clock time lost to pauses
	skipped     time.Duration // schedule clock time jumped over by NextStep
	rateFactor  float64       // chaos traffic_spike
	spikeFactor float64
	spikeUntil  time.Time
	stage       int // the stage last reported (-1 before the first plan)
	step        int // narration step shown (1-based; 0 none)
}

func newSchedule(e *experiment.Experiment, clk clockwork.Clock) *schedule {
	return &schedule{exp: e, clock: clk, rateFactor: 1, spikeFactor: 1, start: clk.Now(), stage: -1}
}

// begin starts the schedule's clock at now (when load starts).
func (s *schedule) begin(now time.Time) {
	s.mu.Lock()
	s.start = now
	s.mu.Unlock()
}

// elapsedLocked is the schedule's time at now: time since load started
// minus time spent paused.
func (s *schedule) elapsedLocked(now time.Time) time.Duration {
	c := now.Sub(s.start) - s.pausedTotal + s.skipped
	if s.paused {
		c -= now.Sub(s.pausedAt)
	}
	return max(c, 0)
}

// plan is what the control loop does at one moment.
type plan struct {
	at       time.Duration // the schedule's clock
	rate     float64       // the target rate, at most load.MaxRate
	stage    int           // the stage now (len(Stages) once they are over)
	newStage bool          // the stage changed since the last plan (or this is the first)
	// firstStage is the first stage not reported before this plan: stages
	// firstStage..stage-1 began and ended between the last plan and this
	// one (NextStep jumped the clock over them, or one lasted less than a
	// control period). Meaningful when newStage.
	firstStage int
	// Narration steps firstStep..lastStep (1-based) show now, in order;
	// lastStep is 0 when none does.
	firstStep, lastStep int
}

// baseLocked is the target rate at now before a spike and the rate
// factor: the manual rate, else the stages' rate.
func (s *schedule) baseLocked(now time.Time) float64 {
	if s.manual {
		return s.manualRate
	}
	return s.exp.TargetAt(s.elapsedLocked(now))
}

// next returns the plan at now and remembers its stage and narration step.
func (s *schedule) next(now time.Time) plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.exp
	p := plan{at: s.elapsedLocked(now)}
	base := s.baseLocked(now)
	f := s.rateFactor
	if now.Before(s.spikeUntil) {
		f *= s.spikeFactor
	}
	p.rate = min(base*f, load.MaxRate)
	p.stage = e.StageAt(p.at)
	p.newStage = p.stage != s.stage
	p.firstStage = min(s.stage+1, p.stage)
	s.stage = p.stage
	shown := 0
	for i, st := range e.Narration {
		if st.At.D() <= p.at {
			shown = i + 1
		}
	}
	if shown > s.step {
		p.firstStep, p.lastStep = s.step+1, shown
		s.step = shown
	}
	return p
}

// control plays the experiment: the target rate (stages, manual override,
// spikes), the fault timeline, narration, and the end of the run.
func (l *Lab) control() {
	e := l.exp
	player := e.Timeline().Play(chaos.Default)
	actions := make(chan chaos.Action, 2*len(e.Faults)+1)
	go l.timelineWorker(actions)
	defer close(actions)

	t := l.clock.NewTicker(controlPeriod)
	defer t.Stop()
	lastRate := -1.0
	for {
		now := l.clock.Now()
		p, due := l.due(now, player)
		if p.rate != lastRate && l.gen.SetRate(p.rate) == nil {
			lastRate = p.rate
			l.recs.rate(now, p.rate)
		}
		l.stageEvents(p)
		for _, a := range due {
			actions <- a
		}
		if e.Duration != experiment.Forever && p.at >= e.Duration.D() {
			go l.finish("done")
			return
		}
		select {
		case <-l.ending: // load is stopping: no more of the schedule plays
			return
		case <-t.Chan():
		}
	}
}

// due is one turn of the control loop at now: the schedule's plan, the
// narration steps it shows (shown here, measuring predictions), and the
// timeline's actions due by the schedule's clock, in order — all of them
// when NextStep jumped the clock past several.
func (l *Lab) due(now time.Time, player *chaos.Player) (plan, []chaos.Action) {
	p := l.sched.next(now)
	l.updateWindows(p.at)
	for n := p.firstStep; n > 0 && n <= p.lastStep; n++ {
		l.showStep(n, false, 0)
	}
	return p, player.Due(p.at)
}

// stageEvents records the stages plan p reaches: one event for every
// stage that began since the last plan, in order, those passed over
// marked skipped.
func (l *Lab) stageEvents(p plan) {
	if !p.newStage {
		return
	}
	for st := p.firstStage; st <= p.stage; st++ {
		l.stageEvent(st, st < p.stage)
	}
}

// stageEvent records that stage (0-based) began, or that the stages are
// over. skipped marks a stage that began and ended between two turns of
// the control loop (an n jump over it): every stage gets its event, in
// order, so a timeline read from events.jsonl has each one; a skipped
// stage's event says it was passed over and carries "skipped": true.
func (l *Lab) stageEvent(stage int, skipped bool) {
	e := l.exp
	switch {
	case stage < len(e.Stages):
		s := e.Stages[stage]
		detail := fmt.Sprintf("stage %d: → %g req/s over %s", stage+1, s.Target, s.Duration)
		fields := map[string]any{"stage": stage + 1, "target": s.Target, "duration": s.Duration.String()}
		if skipped {
			detail += " (skipped)"
			fields["skipped"] = true
		}
		l.event(runfiles.EventStage, detail, fields)
	case len(e.Stages) > 0:
		l.event(runfiles.EventStage, "stages done", map[string]any{"stage": stage + 1})
	}
}

// timelineWorker does the timeline's actions in order, one at a time (a
// node restart waits for readiness without stalling the schedule).
func (l *Lab) timelineWorker(actions <-chan chaos.Action) {
	defer close(l.timelineDone)
	for a := range actions {
		if l.isEnding() {
			continue
		}
		ctx, cancel := context.WithTimeout(l.stepCtx, l.opts.ReadyTimeout+5*time.Second)
		began := time.Now()
		err := a.Do(ctx, l.ctl)
		cancel()
		if err != nil {
			l.progressErr("fault %s: %v", a.Fault, err)
			l.failedStep(a, err)
			continue
		}
		if !a.Revert && a.For > 0 {
			// Nodes this step took down come back when its `for` ends.
			l.sup.ShowRestart(began, a.For)
		}
	}
}

// failedStep records that the timeline's action a failed: in the lab's
// FaultStepErrors (and so the summary of the recording) and as an error
// event naming the step.
func (l *Lab) failedStep(a chaos.Action, err error) {
	action := chaos.ActionApply
	if a.Revert {
		action = chaos.ActionRevert
	}
	step := fmt.Sprintf("faults.%d", a.Step)
	serr := fmt.Errorf("%s (%s): %s at %s: %w", step, a.Fault, action, a.At, err)
	l.mu.Lock()
	l.stepErrs = append(l.stepErrs, serr)
	l.mu.Unlock()
	l.event(runfiles.EventError, "fault step "+serr.Error(), map[string]any{
		"step": step, "fault": a.Fault, "action": action, "at": a.At.String(), "error": err.Error(),
	})
}

// faultObserved records every apply and revert the controller performs.
func (l *Lab) faultObserved(ev chaos.Event) {
	kind := runfiles.EventFaultApply
	if ev.Action == chaos.ActionRevert {
		kind = runfiles.EventFaultRevert
	}
	fields := map[string]any{"fault": ev.Fault, "detail": ev.Detail}
	if ev.Err != "" {
		kind = runfiles.EventFaultError
		fields["action"] = ev.Action
		fields["error"] = ev.Err
	}
	// One time, the controller's (the lab's clock), for the event and the
	// fault's window in the summary: a run rebuilt from events.jsonl reads
	// the windows the finished run's summary has.
	e := l.newEventAt(ev.Time, kind, ev.Fault+" "+ev.Detail, fields)
	if c := l.recs.current(); c != nil {
		_ = c.rec.WriteEvent(e)
	}
	l.mu.Lock()
	if ev.Err != "" {
		l.faultErrs[ev.Fault] = ev.Action + " failed: " + ev.Err
	} else {
		delete(l.faultErrs, ev.Fault)
	}
	l.mu.Unlock()
	if ev.Err == "" {
		l.progress("fault %s %s %s", ev.Action, ev.Fault, ev.Detail)
		l.recs.fault(ev.Fault, kind == runfiles.EventFaultApply, e.Time)
	}
}

// SetRate sets the target rate and pauses the experiment's schedule (a
// manual override) until PauseRamp(false). It refuses a rate that is not
// a number within 0..load.MaxRate req/s, changing nothing, and once the lab
// is finishing it changes nothing and says so (ErrStopping): the load has
// stopped for good.
func (l *Lab) SetRate(rps float64) error {
	if l.isEnding() {
		return ErrStopping
	}
	if !(rps >= 0 && rps <= load.MaxRate) { // NaN and ±Inf too
		return fmt.Errorf("lab: rate %v req/s: want 0..%.0f", rps, load.MaxRate)
	}
	s := l.sched
	now := l.clock.Now()
	s.mu.Lock()
	s.manual, s.manualRate = true, rps
	if !s.paused {
		s.paused, s.pausedAt = true, now
	}
	s.mu.Unlock()
	l.event(runfiles.EventRate, fmt.Sprintf("manual rate %g req/s", rps), map[string]any{"rate": rps})
	return nil
}

// Rate is the target rate as SetRate sets it: the manual rate, else the
// stages' rate now; without a spike or the traffic_spike fault's factor,
// and at once, not a control period later. (It was the generator's rate:
// a dashboard's ×1.25 during a spike made the spike the manual rate for
// good, and keys pressed within one control period all started from the
// same old rate.)
func (l *Lab) Rate() float64 {
	s := l.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	return min(s.baseLocked(l.clock.Now()), load.MaxRate)
}

// Spike multiplies the rate by factor for d (a factor that is not a
// positive finite number, or a duration that is not positive, does
// nothing). Once the lab is finishing it is an error (ErrStopping).
func (l *Lab) Spike(factor float64, d time.Duration) error {
	if l.isEnding() {
		return ErrStopping
	}
	if !(factor > 0) || math.IsInf(factor, 1) || d <= 0 {
		return nil
	}
	s := l.sched
	s.mu.Lock()
	s.spikeFactor, s.spikeUntil = factor, l.clock.Now().Add(d)
	s.mu.Unlock()
	l.event(runfiles.EventSpike, fmt.Sprintf("×%g for %s", factor, d), map[string]any{"factor": factor, "for": d.String()})
	return nil
}

// PauseRamp pauses or resumes the experiment's schedule (stages, fault
// timeline, narration, end). Resuming also ends a manual rate override.
// Once the lab is finishing it is an error: there is no schedule left to
// pause or resume.
func (l *Lab) PauseRamp(paused bool) error {
	if l.isEnding() {
		return ErrStopping
	}
	s := l.sched
	now := l.clock.Now()
	s.mu.Lock()
	changed := paused != s.paused
	switch {
	case paused && !s.paused:
		s.paused, s.pausedAt = true, now
	case !paused && s.paused:
		s.pausedTotal += now.Sub(s.pausedAt)
		s.paused = false
	}
	if !paused {
		s.manual = false
	}
	s.mu.Unlock()
	if changed {
		l.event(runfiles.EventRamp, map[bool]string{true: "paused", false: "resumed"}[paused], nil)
	}
	return nil
}

// RampPaused reports whether the schedule is paused.
func (l *Lab) RampPaused() bool {
	l.sched.mu.Lock()
	defer l.sched.mu.Unlock()
	return l.sched.paused
}
