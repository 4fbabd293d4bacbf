package lab

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/lab/load"
)

// controlPeriod is how often the schedule is applied: rate ramps move in
// steps this long, fault and narration times are met within it.
const controlPeriod = 50 * time.Millisecond

// clock is the experiment's schedule time at now: time since load started
// minus time spent paused.
func (l *Lab) clock(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.clockLocked(now)
}

func (l *Lab) clockLocked(now time.Time) time.Duration {
	c := now.Sub(l.start) - l.pausedTotal
	if l.paused {
		c -= now.Sub(l.pausedAt)
	}
	if c < 0 {
		return 0
	}
	return c
}

// control plays the experiment: the target rate (stages, manual override,
// spikes), the fault timeline, narration, and the end of the run.
func (l *Lab) control() {
	e := l.exp
	player := e.Timeline().Play(chaos.Default)
	actions := make(chan chaos.Action, 2*len(e.Faults)+1)
	go l.timelineWorker(actions)
	defer close(actions)

	t := time.NewTicker(controlPeriod)
	defer t.Stop()
	lastRate := -1.0
	for {
		now := time.Now()
		l.mu.Lock()
		clock := l.clockLocked(now)
		base := e.TargetAt(clock)
		if l.manual {
			base = l.manualRate
		}
		f := l.rateFactor
		if now.Before(l.spikeUntil) {
			f *= l.spikeFactor
		}
		stage := e.StageAt(clock)
		stageChanged := stage != l.stage
		l.stage = stage
		narr := 0
		for i, s := range e.Narration {
			if s.At.D() <= clock {
				narr = i + 1
			}
		}
		var narrStep *Step
		if narr > l.step {
			l.step = narr
			narrStep = &e.Narration[narr-1]
		}
		rec := l.rec
		l.mu.Unlock()

		rate := base * f
		if rate > load.MaxRate {
			rate = load.MaxRate
		}
		if rate != lastRate {
			if err := l.gen.SetRate(rate); err == nil {
				lastRate = rate
				if rec != nil && rec.agg != nil {
					rec.agg.rate(now, rate)
				}
			}
		}
		if stageChanged {
			if stage < len(e.Stages) {
				s := e.Stages[stage]
				l.event(EventStage, fmt.Sprintf("stage %d: → %g req/s over %s", stage+1, s.Target, s.Duration), map[string]any{"stage": stage + 1, "target": s.Target, "duration": s.Duration.String()})
			} else if len(e.Stages) > 0 {
				l.event(EventStage, "stages done", map[string]any{"stage": stage + 1})
			}
		}
		if narrStep != nil {
			l.event(EventNarration, narrStep.Text, map[string]any{"step": narr, "kind": narrStep.Kind})
			l.progress("[%s] %s", narrStep.Kind, narrStep.Text)
		}
		for _, a := range player.Due(clock) {
			actions <- a
		}
		if e.Duration != Forever && clock >= e.Duration.D() {
			go l.finish("done")
			return
		}
		select {
		case <-l.finishing:
			return
		case <-t.C:
		}
	}
}

// timelineWorker does the timeline's actions in order, one at a time (a
// node restart waits for readiness without stalling the schedule).
func (l *Lab) timelineWorker(actions <-chan chaos.Action) {
	for a := range actions {
		if l.isFinishing() {
			continue
		}
		ctx, cancel := context.WithTimeout(l.ctx, l.opts.ReadyTimeout+5*time.Second)
		began := time.Now()
		err := a.Do(ctx, l.ctl)
		cancel()
		if err != nil {
			l.progress("fault %s: %v", a.Fault, err)
			continue
		}
		if !a.Revert && a.For > 0 {
			l.showRestart(began, a.For)
		}
	}
}

// showRestart makes the nodes an apply killed since began show when the
// step's `for` brings them back (NodeSample.RestartIn).
func (l *Lab) showRestart(began time.Time, d time.Duration) {
	at := time.Now().Add(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, killed := range l.killedAt {
		if !killed.Before(began) && !l.nodes[i].Up() {
			l.nodes[i].setRestart(at)
		}
	}
}

// faultObserved records every apply and revert the controller performs.
func (l *Lab) faultObserved(ev chaos.Event) {
	kind := EventFaultApply
	if ev.Action == "revert" {
		kind = EventFaultRevert
	}
	fields := map[string]any{"fault": ev.Fault, "detail": ev.Detail}
	if ev.Err != "" {
		kind = EventFaultError
		fields["action"] = ev.Action
		fields["error"] = ev.Err
	}
	l.event(kind, ev.Fault+" "+ev.Detail, fields)
	if ev.Err == "" {
		l.progress("fault %s %s %s", ev.Action, ev.Fault, ev.Detail)
		l.mu.Lock()
		rec := l.rec
		l.mu.Unlock()
		if rec != nil && rec.agg != nil {
			if kind == EventFaultApply {
				rec.agg.faultApplied(ev.Fault, ev.Time)
			} else {
				rec.agg.faultReverted(ev.Fault, ev.Time)
			}
		}
	}
}

// Samples delivers one Sample per tick until the lab stops, then closes.
// Each call returns a new channel; a slow reader misses samples.
func (l *Lab) Samples() <-chan Sample {
	ch := make(chan Sample, 8)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closedSubs {
		close(ch)
		return ch
	}
	l.subs[ch] = struct{}{}
	return ch
}

// broadcast hands s to every subscriber that has room.
func (l *Lab) broadcast(s Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.subs {
		select {
		case ch <- s:
		default:
		}
	}
}

// SetRate sets the target rate and pauses the experiment's schedule (a
// manual override) until PauseRamp(false).
func (l *Lab) SetRate(rps float64) {
	if rps < 0 || rps != rps {
		rps = 0
	}
	if rps > load.MaxRate {
		rps = load.MaxRate
	}
	now := time.Now()
	l.mu.Lock()
	l.manual, l.manualRate = true, rps
	if !l.paused {
		l.paused, l.pausedAt = true, now
	}
	l.mu.Unlock()
	l.event(EventRate, fmt.Sprintf("manual rate %g req/s", rps), map[string]any{"rate": rps})
}

// Rate is the target rate the generator runs at now.
func (l *Lab) Rate() float64 { return l.gen.Rate() }

// Spike multiplies the rate by factor for d.
func (l *Lab) Spike(factor float64, d time.Duration) {
	if factor <= 0 || factor != factor || d <= 0 {
		return
	}
	l.mu.Lock()
	l.spikeFactor, l.spikeUntil = factor, time.Now().Add(d)
	l.mu.Unlock()
	l.event(EventSpike, fmt.Sprintf("×%g for %s", factor, d), map[string]any{"factor": factor, "for": d.String()})
}

// PauseRamp pauses or resumes the experiment's schedule (stages, fault
// timeline, narration, end). Resuming also ends a manual rate override.
func (l *Lab) PauseRamp(paused bool) {
	now := time.Now()
	l.mu.Lock()
	changed := paused != l.paused
	switch {
	case paused && !l.paused:
		l.paused, l.pausedAt = true, now
	case !paused && l.paused:
		l.pausedTotal += now.Sub(l.pausedAt)
		l.paused = false
	}
	if !paused {
		l.manual = false
	}
	l.mu.Unlock()
	if changed {
		l.event(EventRamp, map[bool]string{true: "paused", false: "resumed"}[paused], nil)
	}
}

// RampPaused reports whether the schedule is paused.
func (l *Lab) RampPaused() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paused
}

// Faults lists the fault catalogue with what is active now. Keys are "1"…"9",
// then "0" for the tenth.
func (l *Lab) Faults() []FaultStatus {
	cat := l.ctl.Catalogue()
	out := make([]FaultStatus, len(cat))
	for i, c := range cat {
		key := ""
		switch {
		case i < 9:
			key = strconv.Itoa(i + 1)
		case i == 9:
			key = "0"
		}
		out[i] = FaultStatus{Key: key, Name: c.Name, Description: c.Description, Active: c.Active, Detail: c.Detail}
	}
	return out
}

// ToggleFault applies the named fault (experiment or default parameters),
// or reverts it when active. The work happens on a lab goroutine; its
// outcome shows in Faults, the samples and events.jsonl. An unknown name is
// an error at once.
func (l *Lab) ToggleFault(name string) error {
	if err := validateFaultName(name); err != nil {
		return err
	}
	if l.isFinishing() {
		return errors.New("lab: stopping")
	}
	go func() {
		ctx, cancel := context.WithTimeout(l.ctx, l.opts.ReadyTimeout+5*time.Second)
		defer cancel()
		if _, err := l.ctl.Toggle(ctx, name); err != nil {
			l.progress("fault %s: %v", name, err)
		}
	}()
	return nil
}

// Defenses reports each defense as the lab last set it on the gateways.
func (l *Lab) Defenses() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]bool, len(l.defenses))
	for k, v := range l.defenses {
		m[k] = v
	}
	return m
}

// SetDefense switches one defense on every gateway (and on gateways that
// restart later). Unknown names are an error at once; the admin calls run
// on a lab goroutine and failures land in events.jsonl.
func (l *Lab) SetDefense(name string, on bool) error {
	if !contains(Defenses, name) {
		return fmt.Errorf("lab: unknown defense %q (known: %v)", name, Defenses)
	}
	l.mu.Lock()
	l.defenses[name] = on
	l.mu.Unlock()
	l.event(EventDefense, fmt.Sprintf("%s %s", name, map[bool]string{true: "on", false: "off"}[on]), map[string]any{"defense": name, "on": on})
	go func() {
		ctx, cancel := context.WithTimeout(l.ctx, 3*time.Second)
		defer cancel()
		for _, g := range l.gateways {
			if !g.Up() {
				continue // it picks the switch up from its config when it restarts
			}
			if err := l.adminJSON(ctx, "PUT", "http://"+g.Admin()+"/admin/defenses", map[string]any{name: on}, nil); err != nil {
				l.event(EventError, g.name+": set defense", map[string]any{"defense": name, "error": err.Error()})
				l.progress("%s: set defense %s: %v", g.name, name, err)
			}
		}
	}()
	return nil
}

var errNotRecording = errors.New("lab: not recording")

// StartRecording starts a new run folder (RunsDir/<time>-<name>) with the
// same files as `levee run`, covering from now until StopRecording.
func (l *Lab) StartRecording() (string, error) {
	if l.isFinishing() {
		return "", errors.New("lab: stopping")
	}
	l.mu.Lock()
	if l.rec != nil {
		dir := l.rec.dir
		l.mu.Unlock()
		return dir, fmt.Errorf("lab: already recording into %s", dir)
	}
	l.mu.Unlock()
	dir, err := resolveRunDir("", l.opts.RunsDir, l.exp.Name, time.Now())
	if err != nil {
		return "", err
	}
	now := time.Now()
	rec, err := openRecorder(dir, l.runInfo(), newAggregator(now, l.gen.Rate()))
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	base := l.gen.Totals()
	rec.baseline = &base
	rec.shedBase = l.sampler.shedTotal()
	l.mu.Lock()
	rec.oomBase, rec.restBase = l.oomKills, l.restarts
	if l.rec != nil { // lost a race with another StartRecording
		l.mu.Unlock()
		rec.close()
		return "", errors.New("lab: already recording")
	}
	l.rec = rec
	l.mu.Unlock()
	for _, fs := range l.ctl.Active() {
		rec.agg.faultApplied(fs.Name, now)
	}
	l.event(EventRecordStart, dir, nil)
	return dir, nil
}

// StopRecording finishes summary.json and closes the recording.
func (l *Lab) StopRecording() error {
	l.mu.Lock()
	rec := l.rec
	l.mu.Unlock()
	if rec == nil {
		return errNotRecording
	}
	l.event(EventRecordStop, rec.dir, nil)
	l.mu.Lock()
	l.rec = nil
	oom, rest := l.oomKills-rec.oomBase, l.restarts-rec.restBase
	ended := l.endReason
	l.mu.Unlock()
	if ended == "" {
		ended = "recording stopped"
	}
	totals := l.gen.Totals()
	if rec.baseline != nil {
		totals = subTotals(totals, *rec.baseline)
	}
	shed := l.sampler.shedTotal() - rec.shedBase
	sum := rec.agg.summarize(summaryInput{
		exp: l.exp, quick: l.opts.Quick, totals: totals,
		gatewayShed: uint64(shed + 0.5), shedExact: rest == 0,
		oomKills: oom, restarts: rest, end: time.Now(), ended: ended,
	})
	var errs []error
	if err := writeJSONAtomic(filepath.Join(rec.dir, SummaryFile), sum); err != nil {
		errs = append(errs, fmt.Errorf("summary.json: %w", err))
	}
	if err := copyLogs(l.logsDir, filepath.Join(rec.dir, LogsDir)); err != nil {
		errs = append(errs, fmt.Errorf("copy logs: %w", err))
	}
	if err := rec.close(); err != nil {
		errs = append(errs, err)
	}
	if err := writeRunReport(rec.dir); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", ReportFile, err))
	}
	l.mu.Lock()
	l.summary = &sum
	l.mu.Unlock()
	return errors.Join(errs...)
}

// Recording reports whether a recording is on.
func (l *Lab) Recording() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec != nil
}

// Lesson reports the narration state.
func (l *Lab) Lesson() LessonState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lessonLocked()
}

func (l *Lab) lessonLocked() LessonState {
	st := LessonState{Title: l.exp.Title, Step: l.step, Steps: len(l.exp.Narration)}
	if l.step > 0 && l.step <= len(l.exp.Narration) {
		s := l.exp.Narration[l.step-1]
		st.Kind, st.Text = s.Kind, s.Text
	}
	return st
}

// NextStep shows the next narration step now (the schedule does not skip).
func (l *Lab) NextStep() {
	l.mu.Lock()
	if l.step >= len(l.exp.Narration) {
		l.mu.Unlock()
		return
	}
	l.step++
	s := l.exp.Narration[l.step-1]
	n := l.step
	l.mu.Unlock()
	l.event(EventNarration, s.Text, map[string]any{"step": n, "kind": s.Kind, "manual": true})
}
