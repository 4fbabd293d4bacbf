package lab

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

// TestDashboardRecordingIsExact records from a running lab the way the
// dashboard does — StartRecording while load runs, every fault key toggled
// many times, StopRecording while requests are in flight — and checks that
// the recording is as exact as a headless run: every request offered in
// the window ends in exactly one outcome, and the gateways' shed counters
// agree with the sheds the clients saw.
func TestDashboardRecordingIsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("a real lab with fault churn")
	}
	exp := experiment.DefaultExperiment()
	// The default lab (3 nodes × 16 slots, every defense but the rate limit,
	// 2× overload) reaching its target within a second.
	exp.StartRate = 400
	exp.Stages = []experiment.Stage{{Duration: experiment.Duration(time.Second), Target: 400}}
	runs := t.TempDir()
	l := openLab(t, exp, Options{RunsDir: runs})
	var c Controls = l
	time.Sleep(time.Second) // requests in flight when recording starts

	dir, err := c.StartRecording()
	if err != nil {
		t.Fatal(err)
	}
	// This lab has no Redis: redis_outage says so, and toggling it is an
	// error at once, not a silent no-op.
	unavailable := map[string]bool{}
	for _, f := range c.Faults() {
		if f.Unavailable != "" {
			unavailable[f.Name] = true
		}
	}
	if !unavailable["redis_outage"] || !unavailable["redis_master_kill"] || len(unavailable) != 2 {
		t.Errorf("unavailable faults %v, want the two Redis faults only (this lab has no Redis)", unavailable)
	}
	const rounds = 4
	for range rounds {
		for _, f := range c.Faults() {
			err := c.ToggleFault(f.Name)
			switch {
			case unavailable[f.Name] && err == nil:
				t.Errorf("toggling %s (unavailable: %s) returned no error", f.Name, f.Unavailable)
			case !unavailable[f.Name] && err != nil:
				t.Fatal(err)
			}
			time.Sleep(60 * time.Millisecond)
		}
	}
	for _, f := range c.Faults() {
		if f.Error != "" {
			t.Logf("fault %s shows its failure: %s", f.Name, f.Error)
		}
	}
	if err := c.StopRecording(); err != nil {
		t.Fatal(err)
	}
	sum := readRun(t, dir).Summary
	checkExact(t, sum)
	var prioOff uint64
	for _, p := range load.Priorities {
		ps := sum.ByPriority[p]
		prioOff += ps.Offered
		var n uint64
		for _, v := range ps.Outcomes {
			n += v
		}
		if n != ps.Offered {
			t.Errorf("%s: offered %d, Σ outcomes %d", p, ps.Offered, n)
		}
	}
	if prioOff != sum.Offered {
		t.Errorf("by_priority offered sums to %d, offered %d", prioOff, sum.Offered)
	}
	if sum.ShedCheck.Client == 0 {
		t.Errorf("no sheds at 2× overload: %+v", sum.Outcomes)
	}
	if sum.ShedCheck.Exact && sum.ShedCheck.Mismatch != 0 {
		t.Errorf("shed check: %+v", sum.ShedCheck)
	}
	t.Logf("offered %d, outcomes %v, shed check %+v", sum.Offered, sum.Outcomes, sum.ShedCheck)
}

// A recording from the start (`levee lab --record`) stopped with r while
// load runs counts exactly the requests offered before it stopped: it
// waits for those in flight, as a recording started with r does. It took
// the generator's totals at that instant instead: 110 of 300 requests
// offered had no outcome yet (unaccounted 110) and the shed check,
// reading the gateways' counters of the last tick, claimed an exact
// mismatch of 43.
func TestRecordingFromTheStartStoppedMidRun(t *testing.T) {
	exp := foreverLab(t, "from-start", 200, 300, "client_timeout: 1s")
	out := t.TempDir() + "/run"
	l := openLab(t, exp, Options{Record: true, Out: out})
	// Requests queue at the one node (8 slots × 300 ms against 200 req/s):
	// many are in flight whenever the recording stops.
	time.Sleep(1500 * time.Millisecond)
	if err := l.StopRecording(); err != nil {
		t.Fatal(err)
	}
	sum := readRun(t, out).Summary
	checkExact(t, sum)
	if sum.ShedCheck.Exact && sum.ShedCheck.Mismatch != 0 {
		t.Errorf("shed check: %+v", sum.ShedCheck)
	}
	if sum.Ended != "recording stopped" {
		t.Errorf("ended %q, want recording stopped", sum.Ended)
	}
	t.Logf("offered %d, outcomes %v, shed check %+v", sum.Offered, sum.Outcomes, sum.ShedCheck)
}

// r pressed as the lab ends: a StartRecording that checked the lab was
// running, then lost the race with the end sequence's StopRecording, made
// a recording nobody would finish — no summary.json, its files left open,
// Recording() true after Wait. It is refused instead (ErrStopping).
func TestStartRecordingRacingTheEnd(t *testing.T) {
	exp := foreverLab(t, "end-race", 20, 20, "client_timeout: 1s")
	runs := t.TempDir()
	l := openLab(t, exp, Options{RunsDir: runs})
	// The end sequence runs between StartRecording's check and its set.
	testHookBeforeRecordingSet = func() {
		if err := l.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	defer func() { testHookBeforeRecordingSet = nil }()
	dir, err := l.StartRecording()
	if !errors.Is(err, ErrStopping) {
		t.Errorf("StartRecording as the lab ended: %q, %v; want ErrStopping", dir, err)
	}
	if l.Recording() {
		t.Errorf("a recording is on after the lab ended: %s", l.Dir())
	}
	if ents, err := os.ReadDir(runs); err != nil || len(ents) != 0 {
		t.Errorf("the refused recording left %v behind (%v)", ents, err)
	}
}

// A fault already active when r starts a recording is judged on the
// requests of the recording: P0 success during it counted from the lab's
// start instead (the P0 answered before the fault and before the
// recording made a fault that failed every P0 call read as a success).
func TestFaultActiveAtRecordingStart(t *testing.T) {
	exp := mustParse(t, `
name: fault-at-start
duration: forever
start_rate: 50
stages: [{duration: 1s, target: 50}]
mix: {priorities: {P0: 1}, routes: {predict: 1}}
client_timeout: 1s
nodes:
  count: 2
  knobs: {slots: 8, latency: {dist: fixed, fixed_ms: 20}}
faults:
  - {at: 1h, fault: model_errors, params: {node: -1, error_rate: 1}}
`)
	l := openLab(t, exp, Options{RunsDir: t.TempDir()})
	ch := l.Samples()
	next := func() runfiles.Sample {
		t.Helper()
		select {
		case s := <-ch:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no sample in 10 s")
		}
		return runfiles.Sample{}
	}
	for s := next(); s.ByPriority["P0"].OKTotal < 50; s = next() {
	}
	if err := l.ToggleFault("model_errors"); err != nil {
		t.Fatal(err)
	}
	s := next()
	for ; len(s.Faults) == 0; s = next() {
	}
	// Every call offered before the fault began (at most the offered count
	// of the first sample that shows it) has ended before the recording
	// starts: waiting for that, not for a fixed time that a stalled
	// machine may overrun.
	for offered := s.OfferedTotal; ; s = next() {
		var ended uint64
		for _, n := range s.OutcomeTotal {
			ended += n
		}
		if ended >= offered {
			break
		}
	}
	dir, err := l.StartRecording()
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 8; {
		if s := next(); s.Recording {
			n++
		}
	}
	if err := l.StopRecording(); err != nil {
		t.Fatal(err)
	}
	run, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := run.Summary
	if len(sum.Faults) != 1 || sum.Faults[0].Fault != "model_errors" || sum.Faults[0].P0SuccessRate == nil {
		t.Fatalf("faults %+v", sum.Faults)
	}
	if ok := sum.Outcomes["ok"]; ok != 0 {
		t.Fatalf("%d requests ok in the recording: the fault did not fail every call", ok)
	}
	if got := *sum.Faults[0].P0SuccessRate; got != 0 {
		t.Errorf("P0 success during the fault %v, want 0: no P0 call of the recording succeeded", got)
	}
	// events.jsonl opens the same window (the rebuild of a killed run and
	// the HTML report's bands read it there): an apply at the summary's
	// start, though the fault was applied before the recording.
	evs, err := runfiles.ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	applies := 0
	for _, e := range evs {
		if e.Kind != runfiles.EventFaultApply {
			continue
		}
		applies++
		if at := e.Time.Sub(sum.Started).Seconds(); e.Fields["fault"] != "model_errors" || math.Abs(at-sum.Faults[0].AtS) > 1e-3 {
			t.Errorf("apply event %+v at %.3f s, want model_errors at the summary's %.3f s", e, at, sum.Faults[0].AtS)
		}
	}
	if applies != 1 {
		t.Errorf("%d fault_apply events, want the one active when the recording began", applies)
	}
}

// Two StartRecordings at once (r from two dashboards, or a script): one
// wins, and the other leaves no folder behind. The loser's folder stayed
// with an empty samples.jsonl and events.jsonl and no summary, a run that
// `levee report runs/*` cannot read ("no summary.json and no samples").
func TestLosingStartRecordingLeavesNoFolder(t *testing.T) {
	exp := foreverLab(t, "two-r", 20, 20, "client_timeout: 1s")
	runs := t.TempDir()
	l := openLab(t, exp, Options{RunsDir: runs})
	// The second StartRecording runs, whole, inside the first, after the
	// first made its folder and before it became the lab's recording.
	var winner string
	var winErr error
	testHookBeforeRecordingSet = func() {
		testHookBeforeRecordingSet = nil
		winner, winErr = l.StartRecording()
	}
	defer func() { testHookBeforeRecordingSet = nil }()
	if _, err := l.StartRecording(); err == nil {
		t.Fatal("both StartRecordings succeeded")
	}
	if winErr != nil {
		t.Fatal(winErr)
	}
	if err := l.StopRecording(); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 1 || filepath.Join(runs, names[0]) != winner {
		t.Errorf("run folders %v, want only the winner's %s", names, winner)
	}
	if _, err := runfiles.ReadRun(winner); err != nil {
		t.Error(err)
	}
}
