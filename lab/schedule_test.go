package lab

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

// The schedule runs on the lab's clock: with a fake clock the ramp, a
// pause, a manual override, a spike and the narration steps are exact.
func TestScheduleOnAFakeClock(t *testing.T) {
	e, err := experiment.ParseExperiment([]byte(`
name: s
start_rate: 0
stages: [{duration: 10s, target: 100}, {duration: 10s, target: 100}]
narration:
  - {at: 0s, kind: predict, text: one}
  - {at: 8s, kind: watch, text: two}
`))
	if err != nil {
		t.Fatal(err)
	}
	l, fc := fakeClockLab(e)
	at := func(want time.Duration, rate float64, stage, narration int) {
		t.Helper()
		p := l.sched.next(fc.Now())
		if p.at != want || p.rate != rate || p.stage != stage || p.lastStep != narration {
			t.Fatalf("plan %+v, want at %v rate %v stage %d narration %d", p, want, rate, stage, narration)
		}
	}
	at(0, 0, 0, 1)
	fc.Advance(5 * time.Second)
	at(5*time.Second, 50, 0, 0) // halfway up the first ramp
	l.PauseRamp(true)
	fc.Advance(time.Hour) // paused: the schedule's clock stands still
	at(5*time.Second, 50, 0, 0)
	l.PauseRamp(false)
	fc.Advance(3 * time.Second)
	at(8*time.Second, 80, 0, 2)
	if err := l.SetRate(20); err != nil { // a manual override pauses the ramp
		t.Fatal(err)
	}
	fc.Advance(5 * time.Second)
	at(8*time.Second, 20, 0, 0)
	l.Spike(3, 2*time.Second)
	at(8*time.Second, 60, 0, 0)
	fc.Advance(2 * time.Second)
	at(8*time.Second, 20, 0, 0)
	l.PauseRamp(false) // resuming ends the override
	fc.Advance(2 * time.Second)
	at(10*time.Second, 100, 1, 0)
	l.SetRateFactor(2) // the traffic_spike fault
	at(10*time.Second, 200, 1, 0)
	// A rate that is not a number within 0..load.MaxRate is refused and
	// changes nothing (the ramp stays resumed, the rate the schedule's).
	for _, bad := range []float64{load.MaxRate * 1.25, math.Inf(1), math.Inf(-1), math.NaN(), -1} {
		err := l.SetRate(bad)
		if err == nil || !strings.Contains(err.Error(), "want 0..1000000") {
			t.Errorf("SetRate(%v) = %v, want a refusal naming the bounds", bad, err)
		}
	}
	if l.RampPaused() {
		t.Error("a refused SetRate paused the ramp")
	}
	at(10*time.Second, 200, 1, 0)
	// A spike or traffic_spike factor that is not finite is ignored.
	l.Spike(math.Inf(1), time.Second)
	l.SetRateFactor(math.Inf(1))
	at(10*time.Second, 100, 1, 0)
	if err := l.SetRate(load.MaxRate); err != nil {
		t.Errorf("SetRate(MaxRate): %v", err)
	}
	if ls := l.Lesson(); ls.Step != 2 || ls.Text != "two" {
		t.Errorf("lesson %+v", ls)
	}
}

// n moves the lesson to the next step's time: the schedule's clock jumps
// (stages' rate included), the faults due in between come out in order
// (apply, revert, apply), the step shows at once and is not shown twice,
// and the clock never goes back for a step already due.
func TestNextStepJumpsTheSchedule(t *testing.T) {
	e, err := experiment.ParseExperiment([]byte(`
name: j
start_rate: 100
stages: [{duration: 10s, target: 100}, {duration: 10s, target: 1100}, {duration: 40s, target: 1100}]
faults:
  - {at: 4s, fault: model_latency, params: {multiplier: 3}, for: 3s}
  - {at: 12s, fault: model_slots, params: {slots: 4}, for: 20s}
  - {at: 40s, fault: node_kill, params: {node: 0}, for: 5s}
narration:
  - {at: 0s, kind: predict, text: one}
  - {at: 15s, kind: watch, text: two}
  - {at: 15s, kind: watch, text: two and a half}
  - {at: 30s, kind: explain, text: three}
`))
	if err != nil {
		t.Fatal(err)
	}
	l, fc := fakeClockLab(e)
	player := e.Timeline().Play(chaos.Default)
	names := func(as []chaos.Action) []string {
		var out []string
		for _, a := range as {
			out = append(out, fmt.Sprintf("%s %s@%v", map[bool]string{false: "apply", true: "revert"}[a.Revert], a.Fault, a.At))
		}
		return out
	}

	p, due := l.due(fc.Now(), player)
	if p.lastStep != 1 || len(due) != 0 {
		t.Fatalf("start: plan %+v due %v", p, names(due))
	}
	fc.Advance(2 * time.Second)
	l.NextStep() // to step 2 at 15 s: 13 s forward
	if ls := l.Lesson(); ls.Step != 2 || ls.Text != "two" {
		t.Fatalf("after n: %+v", ls)
	}
	p, due = l.due(fc.Now(), player)
	if p.at != 15*time.Second || p.rate != 600 || p.stage != 1 {
		t.Errorf("after the jump: at %v rate %v stage %d, want 15s 600 1", p.at, p.rate, p.stage)
	}
	// Step 3 shares step 2's time: the loop shows it; step 2 is not shown again.
	if p.firstStep != 3 || p.lastStep != 3 {
		t.Errorf("steps shown by the loop %d..%d, want 3..3", p.firstStep, p.lastStep)
	}
	want := []string{"apply model_latency@4s", "revert model_latency@7s", "apply model_slots@12s"}
	if got := names(due); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("actions due after the jump %v, want %v", got, want)
	}
	// Paused, n still moves the lesson; the clock stays paused there.
	l.PauseRamp(true)
	fc.Advance(time.Minute)
	l.NextStep() // step 4 at 30 s
	p, due = l.due(fc.Now(), player)
	if p.at != 30*time.Second || p.lastStep != 0 || fmt.Sprint(names(due)) != "[]" {
		t.Errorf("paused jump: at %v steps %d..%d due %v", p.at, p.firstStep, p.lastStep, names(due))
	}
	l.PauseRamp(false)
	fc.Advance(12 * time.Second)
	p, due = l.due(fc.Now(), player)
	if want := "[revert model_slots@32s apply node_kill@40s]"; fmt.Sprint(names(due)) != want || p.at != 42*time.Second {
		t.Errorf("at %v due %v, want 42s %s", p.at, names(due), want)
	}
	if err := l.NextStep(); !errors.Is(err, ErrNoNextStep) || !strings.Contains(err.Error(), "step 4/4 is the last") { // past the last step: nothing moves
		t.Errorf("n after the last step: err %v, want ErrNoNextStep saying step 4/4 is the last", err)
	}
	if p2, _ := l.due(fc.Now(), player); p2.at != p.at {
		t.Errorf("n after the last step moved the clock to %v", p2.at)
	}
}

// Once the experiment has ended (the lab is ending), n is refused with
// ErrStopping, as the rate controls and fault keys are: it moved the
// lesson's step and schedule clock, wrote a narration event after the
// run's end and said nothing.
func TestNextStepRefusedWhenFinishing(t *testing.T) {
	e := mustParse(t, `
name: s
start_rate: 10
stages: [{duration: 60s, target: 10}]
narration:
  - {at: 0s, kind: predict, text: one}
  - {at: 30s, kind: watch, text: two}
`)
	l, fc := fakeClockLab(e)
	l.due(fc.Now(), e.Timeline().Play(chaos.Default))
	fc.Advance(5 * time.Second)
	l.ending = make(chan struct{})
	close(l.ending)
	before := l.sched.next(fc.Now())
	if err := l.NextStep(); !errors.Is(err, ErrStopping) {
		t.Errorf("finishing: err %v, want ErrStopping", err)
	}
	after := l.sched.next(fc.Now())
	if ls := l.Lesson(); ls.Step != 1 || after.at != before.at {
		t.Errorf("finishing: step %d, clock %v → %v: n moved the lesson", ls.Step, before.at, after.at)
	}
}

// fakeClockLab is a Lab with only its schedule and narration, on a fake
// clock, begun at the clock's now: enough to drive the lesson's timeline
// (due, NextStep, Lesson) without processes.
func fakeClockLab(e *experiment.Experiment) (*Lab, *clockwork.FakeClock) {
	fc := clockwork.NewFakeClock()
	l := &Lab{exp: e, clock: fc, sched: newSchedule(e, fc)}
	l.narr.init()
	l.sched.begin(fc.Now())
	return l, fc
}

// Once the lab is finishing, the rate controls change nothing and say so,
// as ToggleFault does, so a dashboard does not report a change that
// cannot happen.
func TestRateControlsRefusedWhenFinishing(t *testing.T) {
	e, err := experiment.ParseExperiment([]byte(`
name: s
start_rate: 0
stages: [{duration: 10s, target: 100}]
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		do   func(l *Lab) error
	}{
		{"SetRate", func(l *Lab) error { return l.SetRate(20) }},
		{"Spike", func(l *Lab) error { return l.Spike(3, time.Second) }},
		{"PauseRamp(true)", func(l *Lab) error { return l.PauseRamp(true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, fc := fakeClockLab(e)
			fc.Advance(5 * time.Second)
			if err := tt.do(l); err != nil {
				t.Fatalf("while running: %v", err)
			}
			l, fc = fakeClockLab(e)
			fc.Advance(5 * time.Second)
			l.ending = make(chan struct{})
			close(l.ending)
			before := l.sched.next(fc.Now())
			if err := tt.do(l); !errors.Is(err, ErrStopping) {
				t.Errorf("finishing: err %v, want ErrStopping", err)
			}
			if after := l.sched.next(fc.Now()); after.rate != before.rate || l.RampPaused() {
				t.Errorf("finishing: rate %v → %v, paused %t: the schedule changed", before.rate, after.rate, l.RampPaused())
			}
		})
	}
}

// Rate is the target as SetRate sets it, at once and without a spike or
// the traffic_spike factor: the dashboard's ↑/↓ multiply it by 1.25 and
// set the result. It was the generator's rate, which the control loop
// updates every control period with the spike and factor applied: ↑ during
// a ×3 spike set 3.75× the rate for good (seen in tmux: 76/s, s, ↑ →
// 284/s once the spike ended), and keys pressed within one control period
// all started from the same old rate.
func TestRateIsTheTargetSetRateSets(t *testing.T) {
	e := mustParse(t, `
name: s
start_rate: 0
stages: [{duration: 10s, target: 100}]
`)
	l, fc := fakeClockLab(e)
	var err error
	l.gen, err = load.New(load.Config{
		Targets: []string{"http://127.0.0.1:1"}, // never started: no request is sent
		Mix: load.Mix{Priorities: map[string]float64{"P0": 1}, Keys: map[string]string{"P0": "k0"},
			Routes: map[string]float64{"predict": 1}},
		Arrival: load.ArrivalConstant, ClientTimeout: time.Second, MaxOutstanding: 1,
	}, load.WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	tick := func() { // one round of the control loop
		t.Helper()
		if err := l.gen.SetRate(l.sched.next(fc.Now()).rate); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what string, rate float64) {
		t.Helper()
		if got := l.Rate(); got != rate {
			t.Errorf("%s: Rate() = %v, want %v", what, got, rate)
		}
	}
	fc.Advance(5 * time.Second)
	tick()
	want("the ramp halfway up", 50)
	if err := l.SetRate(76); err != nil {
		t.Fatal(err)
	}
	want("right after SetRate(76)", 76)
	tick()
	if err := l.Spike(3, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tick()
	if l.gen.Rate() != 228 {
		t.Fatalf("the generator runs at %v during the spike, want 228", l.gen.Rate())
	}
	want("during a ×3 spike", 76)
	l.SetRateFactor(2) // the traffic_spike fault
	tick()
	want("with the traffic_spike factor", 76)
	if err := l.SetRate(l.Rate() * 1.25); err != nil { // ↑
		t.Fatal(err)
	}
	l.SetRateFactor(1)
	fc.Advance(10 * time.Second) // the spike is over
	tick()
	if got := l.gen.Rate(); got != 95 {
		t.Errorf("after ↑ during the spike and the spike's end, the generator runs at %v, want 95", got)
	}
}

// Once Stop was called the controls that would change the run refuse
// (ErrStopping), also while the requests in flight drain: the load has
// stopped for good. They were accepted until the drain ended — SetRate
// said the rate changed, ToggleFault applied a fault to the nodes under
// the requests still in flight, after the run's end.
func TestControlsRefusedWhileDraining(t *testing.T) {
	exp := mustParse(t, `
name: drain
duration: forever
start_rate: 40
stages: [{duration: 1s, target: 40}]
mix: {routes: {predict: 1}}
client_timeout: 5s
nodes:
  count: 1
  knobs: {slots: 64, latency: {dist: fixed, fixed_ms: 2000}}
`)
	l := openLab(t, exp, Options{RunsDir: t.TempDir()})
	time.Sleep(500 * time.Millisecond) // requests in flight, each for 2 s
	go l.Stop(context.Background())
	for {
		l.mu.Lock()
		ended := l.endReason
		l.mu.Unlock()
		if ended != "" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	errs := map[string]error{
		"SetRate":     l.SetRate(10),
		"Spike":       l.Spike(3, time.Second),
		"PauseRamp":   l.PauseRamp(true),
		"ToggleFault": l.ToggleFault("model_latency"),
	}
	_, errs["StartRecording"] = l.StartRecording()
	if l.loadFinished() {
		t.Fatal("the drain ended before the controls were tried: the test proves nothing")
	}
	for name, err := range errs {
		if !errors.Is(err, ErrStopping) {
			t.Errorf("%s while draining: %v, want ErrStopping", name, err)
		}
	}
}

// The first stage's start is an event too: the schedule began at stage 0
// as if it had already reported it, so events.jsonl went from run_start
// to "stage 2" (seen in a --quick run of 02-semaphore).
func TestFirstStageIsReported(t *testing.T) {
	e, err := experiment.ParseExperiment([]byte(`
name: s
start_rate: 0
stages: [{duration: 10s, target: 100}, {duration: 10s, target: 100}]
`))
	if err != nil {
		t.Fatal(err)
	}
	l, fc := fakeClockLab(e)
	var got []string
	for range 25 {
		if p := l.sched.next(fc.Now()); p.newStage {
			got = append(got, fmt.Sprintf("%d@%v", p.stage, p.at))
		}
		fc.Advance(time.Second)
	}
	if want := "[0@0s 1@10s 2@20s]"; fmt.Sprint(got) != want {
		t.Errorf("stages reported %v, want %s", got, want)
	}
}

// An n jump over several stages records every stage it passes, in order,
// the ones jumped over marked skipped, so a timeline read from
// events.jsonl is complete. Only the stage it landed in was recorded.
func TestNextStepRecordsEveryStagePassed(t *testing.T) {
	e := mustParse(t, `
name: s
start_rate: 10
stages: [{duration: 10s, target: 10}, {duration: 5s, target: 20}, {duration: 5s, target: 30}, {duration: 20s, target: 40}, {duration: 10s, target: 40}]
narration:
  - {at: 0s, kind: predict, text: one}
  - {at: 25s, kind: watch, text: two}
  - {at: 45s, kind: explain, text: three}
`)
	l, fc := fakeClockLab(e)
	dir := t.TempDir() + "/run"
	if err := l.recs.open(dir, runfiles.RunInfo{}, nil); err != nil {
		t.Fatal(err)
	}
	player := e.Timeline().Play(chaos.Default)
	turn := func() { // one turn of the control loop
		p, _ := l.due(fc.Now(), player)
		l.stageEvents(p)
	}
	turn()                  // stage 1 at 0 s
	fc.Advance(time.Second) // 1 s
	turn()
	if err := l.NextStep(); err != nil { // to 25 s: over stages 2 (10 s) and 3 (15 s) into 4 (20 s)
		t.Fatal(err)
	}
	turn()
	if err := l.NextStep(); err != nil { // to 45 s: into stage 5 (40 s)
		t.Fatal(err)
	}
	turn()
	if err := l.recs.take().rec.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := runfiles.ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.Kind == runfiles.EventStage {
			got = append(got, fmt.Sprintf("%v%s", ev.Fields["stage"], map[bool]string{true: " skipped"}[ev.Fields["skipped"] == true]))
		}
	}
	if want := "[1 2 skipped 3 skipped 4 5]"; fmt.Sprint(got) != want {
		t.Errorf("stage events %v, want %s", got, want)
	}
}
