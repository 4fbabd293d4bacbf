package tui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/runfiles"
)

// fakeControls is a lab.Controls that records every call. Samples are fed
// by the test through ch.
type fakeControls struct {
	ch chan runfiles.Sample

	mu        sync.Mutex
	calls     []string // guarded by mu
	rate      float64
	paused    bool
	faults    []lab.FaultStatus
	defenses  map[string]bool
	recording bool
	lesson    lab.LessonState
	redis     lab.RedisStatus
	failNext  error // returned (once) by the next method that can fail
	stopped   bool
	finishing bool   // the lab ended: controls that change the run refuse
	onStop    func() // called by Stop (may be nil)
}

func newFake() *fakeControls {
	return &fakeControls{
		ch:   make(chan runfiles.Sample, 256),
		rate: 100,
		faults: []lab.FaultStatus{
			{Key: "1", Name: "node_kill", Description: "SIGKILL one model node"},
			{Key: "2", Name: "model_latency", Description: "model latency ×3"},
			{Key: "3", Name: "gc_pressure", Description: "allocation churn in the gateway"},
			{Key: "4", Name: "redis_outage", Description: "stop Redis", Unavailable: "no Redis in this lab"},
		},
		defenses: map[string]bool{"ratelimit": true, "guard": true, "bulkhead": true, "budget": true,
			"breaker": true, "retry": false, "fallback": true},
		lesson: lab.LessonState{Title: "03 priority shedding", Step: 2, Steps: 5, Kind: "predict",
			Text: "Predict: when the level turns red, what happens to P1? Write your guess down before pressing n."},
	}
}

func (f *fakeControls) record(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
}

// Calls returns the mutating calls recorded so far.
func (f *fakeControls) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeControls) takeErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.failNext
	f.failNext = nil
	return err
}

func (f *fakeControls) Samples() <-chan runfiles.Sample { return f.ch }

// refused is lab.ErrStopping once the fake lab is finishing, as the lab's
// controls that change the run return.
func (f *fakeControls) refused() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.finishing {
		return lab.ErrStopping
	}
	return nil
}

func (f *fakeControls) SetRate(rps float64) error {
	f.record("SetRate(%.2f)", rps)
	if err := f.refused(); err != nil {
		return err
	}
	if err := f.takeErr(); err != nil {
		return err
	}
	f.mu.Lock()
	f.rate, f.paused = rps, true
	f.mu.Unlock()
	return nil
}
func (f *fakeControls) Rate() float64 { f.mu.Lock(); defer f.mu.Unlock(); return f.rate }
func (f *fakeControls) Spike(factor float64, d time.Duration) error {
	f.record("Spike(%g, %s)", factor, d)
	return f.refused()
}
func (f *fakeControls) PauseRamp(p bool) error {
	f.record("PauseRamp(%t)", p)
	if err := f.refused(); err != nil {
		return err
	}
	f.mu.Lock()
	f.paused = p
	f.mu.Unlock()
	return nil
}
func (f *fakeControls) RampPaused() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.paused }
func (f *fakeControls) Faults() []lab.FaultStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]lab.FaultStatus(nil), f.faults...)
}
func (f *fakeControls) ToggleFault(name string) error {
	f.record("ToggleFault(%s)", name)
	if err := f.takeErr(); err != nil {
		return err
	}
	if err := f.refused(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.faults {
		if f.faults[i].Name == name {
			f.faults[i].Active = !f.faults[i].Active
			return nil
		}
	}
	return fmt.Errorf("unknown fault %q", name)
}
func (f *fakeControls) Defenses() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for k, v := range f.defenses {
		out[k] = v
	}
	return out
}
func (f *fakeControls) SetDefense(name string, on bool) error {
	f.record("SetDefense(%s, %t)", name, on)
	if err := f.takeErr(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defenses[name] = on
	return nil
}
func (f *fakeControls) StartRecording() (string, error) {
	f.record("StartRecording()")
	if err := f.takeErr(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recording = true
	return "runs/20261130-091500-default", nil
}
func (f *fakeControls) StopRecording() error {
	f.record("StopRecording()")
	if err := f.takeErr(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recording = false
	return nil
}
func (f *fakeControls) Recording() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.recording }
func (f *fakeControls) Lesson() lab.LessonState {
	f.mu.Lock()
	defer f.mu.Unlock()
	ls := f.lesson
	if ls.Ask != nil {
		a := *ls.Ask
		ls.Ask = &a
	}
	return ls
}
func (f *fakeControls) Redis() lab.RedisStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.redis
}
func (f *fakeControls) NextStep() error {
	f.record("NextStep()")
	if err := f.refused(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lesson.Step >= f.lesson.Steps {
		return fmt.Errorf("%w: step %d/%d is the last", lab.ErrNoNextStep, f.lesson.Step, f.lesson.Steps)
	}
	f.lesson.Step++
	f.lesson.Kind = "watch"
	f.lesson.Text = "Watch the P1 line on the success chart."
	return nil
}
func (f *fakeControls) Predict(a lab.PredictionAnswer) error {
	if a.Skipped {
		f.record("Predict(step %d, skipped)", a.Step)
	} else {
		f.record("Predict(step %d, %g)", a.Step, a.Value)
	}
	if err := f.takeErr(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lesson.Ask != nil && f.lesson.Ask.Step == a.Step {
		f.lesson.Ask.Answered, f.lesson.Ask.Skipped, f.lesson.Ask.Value = true, a.Skipped, a.Value
	}
	return nil
}
func (f *fakeControls) Stop(ctx context.Context) error {
	_, hasDeadline := ctx.Deadline()
	f.record("Stop(deadline=%t)", hasDeadline)
	if f.onStop != nil {
		f.onStop()
	}
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	return f.takeErr()
}

var errFake = errors.New("admin API said no")

// fixedSamples is a deterministic run: 60 ticks at 4 Hz of a ramp into
// overload, a node kill at tick 30 (retries rise), node #3 ejected by the
// gateway from tick 50 (hedges start), and two stale gateway scrapes.
func fixedSamples() []runfiles.Sample {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var out []runfiles.Sample
	for i := 0; i < 60; i++ {
		el := float64(i) * 0.25
		target := 40 + float64(i)*2
		capacity := 96.0
		up2 := true
		if i >= 30 {
			capacity = 64
			up2 = false
		}
		admitted := minf(target, capacity*1.05)
		shed := target - admitted
		good := admitted * 0.98
		level := "green"
		switch {
		case target > capacity*1.2:
			level = "red"
		case target > capacity:
			level = "yellow"
		}
		p1 := 1.0
		if target > capacity {
			p1 = capacity / target
		}
		s := runfiles.Sample{
			Time: t0.Add(time.Duration(i) * 250 * time.Millisecond), Elapsed: el,
			TargetRPS: target, OfferedRPS: target - 0.5, AdmittedRPS: admitted, GoodputRPS: good,
			CapacityRPS: capacity, Outstanding: int(admitted),
			OfferedTotal: uint64(i * 30),
			ByPriority: map[string]runfiles.PrioritySample{
				"P0": {OfferedTotal: uint64(i * 6), OKTotal: uint64(i * 6), SuccessRate: 1 - 0.0003*float64(i%3), SuccessFinished: uint64(min(i, 12) * 6)},
				"P1": {OfferedTotal: uint64(i * 12), OKTotal: uint64(float64(i*12) * p1), SuccessRate: p1, SuccessFinished: uint64(min(i, 12) * 12)},
				"P2": {OfferedTotal: uint64(i * 12), OKTotal: uint64(float64(i*12) * p1 * p1), SuccessRate: p1 * p1 * 0.9, SuccessFinished: uint64(min(i, 12) * 12)},
			},
			AdmittedP50Ms: 400 + float64(i)*3, AdmittedP99Ms: 900 + float64(i)*12,
			Level:             level,
			LagProbeP99Ms:     2 + float64(i%7),
			SchedLatencyP99Ms: 1 + float64(i%5)*0.5,
			GCPauseP99Ms:      0.3,
			HeapBytes:         float64(40+i) * (1 << 20),
			Goroutines:        200 + float64(i)*10,
			Inflight:          minf(admitted, 48),
			QueueDepth:        maxf(0, admitted-48),
			ConcurrencyLimit:  48,
			ShedRPSByReason:   map[string]float64{"overload": shed * 0.7, "queue_full": shed * 0.3},
			ShedRPSByPriority: map[string]float64{"P2": shed * 0.8, "P1": shed * 0.2},
			Nodes: []runfiles.NodeSample{
				{Index: 0, Addr: "127.0.0.1:41001", Up: true, Busy: minf(16, admitted/3), Slots: 16, Queued: 2},
				{Index: 1, Addr: "127.0.0.1:41002", Up: up2, Busy: minf(16, admitted/3), Slots: 16},
				{Index: 2, Addr: "127.0.0.1:41003", Up: true, Busy: minf(16, admitted/3), Slots: 16, Queued: 1},
			},
			Defenses: map[string]bool{"ratelimit": true, "guard": true, "bulkhead": true},
			RetryRPS: 0.5,
		}
		for j := range s.Nodes {
			s.Nodes[j].Ejection = "in_rotation"
		}
		if i >= 50 {
			s.Nodes[2].Ejection = "ejected"
			s.Nodes[2].Busy, s.Nodes[2].Queued = 1, 0 // only what it had before
			s.HedgeRPS = 0.8
		}
		if !up2 {
			s.Nodes[1].Busy = 0
			s.Nodes[1].RestartIn = 10 - float64(i-30)*0.25
			s.RetryRPS = 4.2
			s.Faults = []runfiles.ActiveFault{{Name: "node_kill", Detail: "#2 for 10s"}}
		}
		if i == 20 || i == 21 { // the gateway scrape failed: nothing measured
			s.GatewayStale = true
			s.Level, s.LagProbeP99Ms, s.SchedLatencyP99Ms, s.GCPauseP99Ms = "", 0, 0, 0
			s.HeapBytes, s.Goroutines, s.Inflight, s.QueueDepth, s.ConcurrencyLimit = 0, 0, 0, 0, 0
			s.ShedRPSByReason, s.ShedRPSByPriority = nil, nil
			s.RetryRPS, s.HedgeRPS = 0, 0
			for j := range s.Nodes {
				s.Nodes[j].Ejection = ""
			}
		}
		out = append(out, s)
	}
	return out
}

func minf(a, b float64) float64 {
	if a < b {
		return a
	}
	return b
}

func maxf(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}
