package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

// shortExperiment is a few seconds of real load through a real gateway in
// front of two real fake model nodes, offered about 4× their capacity,
// with node 1 killed and restarted on its port midway.
const shortExperiment = `
name: e2e
duration: 4s
stages:
  - {duration: 1s, target: 300}
  - {duration: 3s, target: 300}
mix:
  priorities: {P0: 0.2, P1: 0.3, P2: 0.5}
  routes: {predict: 1}
client_timeout: 1s
nodes:
  count: 2
  knobs: {slots: 4, latency: {dist: fixed, fixed_ms: 100}}
gateway:
  limits: {classes: {ai: {algorithm: static, limit: 8, min: 1, max: 64, queue_size: 8, queue_timeout_ms: 200}}}
faults:
  - {at: 1500ms, fault: node_kill, params: {node: 1, for: 0s}, for: 1s}
narration:
  - {at: 0s, kind: predict, text: "predict"}
  - {at: 1s, kind: watch, text: "watch"}
  - {at: 3s, kind: explain, text: "explain"}
thresholds:
  unaccounted: "== 0"
  shed_mismatch: "== 0"
  p0_success_rate: ">= 0"
  goodput_ratio: "> 100"
`

func mustParse(t *testing.T, y string) *experiment.Experiment {
	t.Helper()
	e, err := experiment.ParseExperiment([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// A zombie (state Z) is dead; it waits only for its reaper.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

func waitGone(t *testing.T, pids map[string]int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for name, pid := range pids {
		for !processGone(pid) {
			if time.Now().After(deadline) {
				t.Errorf("%s (pid %d) still running", name, pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestRunEndToEnd plays a short experiment as `levee run` does and checks
// the recording: exact accounting, the gateway's shed counters equal to
// what the client saw, samples at ≥ 4 Hz, events, and read-back.
func TestRunEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	exp := mustParse(t, shortExperiment)
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, Record: true, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	samples := l.Samples()
	pids := l.ChildPIDs()
	var got []runfiles.Sample
	for s := range samples { // closes when the lab stops
		got = append(got, s)
	}
	if err := l.Wait(); err != nil {
		t.Fatal(err)
	}
	sum := l.Summary()
	if sum == nil {
		t.Fatal("no summary")
	}
	waitGone(t, pids, 5*time.Second)
	if sum.Ended != "done" {
		t.Errorf("ended %q", sum.Ended)
	}

	checkExact(t, sum)
	var prioOff uint64
	for _, p := range load.Priorities {
		prioOff += sum.ByPriority[p].Offered
	}
	if prioOff != sum.Offered {
		t.Errorf("by_priority offered sums to %d, offered %d", prioOff, sum.Offered)
	}
	// 4× overload: the gateway sheds, and its counters match the client's.
	if sum.ShedCheck.Client == 0 {
		t.Errorf("no sheds at 4× overload: %+v", sum.Outcomes)
	}
	if !sum.ShedCheck.Exact || sum.ShedCheck.Mismatch != 0 {
		t.Errorf("shed check: %+v", sum.ShedCheck)
	}
	if sum.CapacityRPS <= 0 || sum.GoodputRPS <= 0 {
		t.Errorf("capacity %v goodput %v", sum.CapacityRPS, sum.GoodputRPS)
	}
	// Thresholds: the impossible one fails, the others pass.
	if r := sum.Thresholds["goodput_ratio"]; r.Pass {
		t.Errorf("goodput_ratio > 100 passed: %+v", r)
	}
	for _, n := range []string{"unaccounted", "shed_mismatch", "p0_success_rate"} {
		if r, ok := sum.Thresholds[n]; !ok || !r.Pass {
			t.Errorf("threshold %s: %+v", n, r)
		}
	}
	if f := sum.FailedThresholds(); len(f) != 1 || !strings.HasPrefix(f[0], "goodput_ratio") {
		t.Errorf("failed thresholds %q", f)
	}
	// The node kill shows in the summary's faults.
	if len(sum.Faults) != 1 || sum.Faults[0].Fault != "node_kill" || sum.Faults[0].EndS <= sum.Faults[0].AtS {
		t.Errorf("faults: %+v", sum.Faults)
	}

	// Files read back.
	fromDisk, err := runfiles.ReadSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 4 s at 4 Hz is 16 samples, but a starved lab process gets its ticks
	// late and a ticker drops the ones it missed: the count depends on
	// the machine's load. The tick in force is the experiment's, and the
	// run is sampled from start to end.
	if len(fromDisk) < 2 {
		t.Errorf("%d samples in 4 s", len(fromDisk))
	} else if len(fromDisk) < 8 {
		t.Logf("only %d samples in 4 s at a %v tick: a busy machine", len(fromDisk), exp.Tick.D())
	}
	if len(got) == 0 {
		t.Errorf("Samples() delivered nothing")
	}
	sawDown, sawRestartIn := false, false
	for i, s := range fromDisk {
		if i > 0 && s.Elapsed < fromDisk[i-1].Elapsed {
			t.Errorf("sample %d goes back in time", i)
		}
		if len(s.OutcomeTotal) != len(load.Outcomes) || len(s.ByPriority) != 3 || len(s.Nodes) != 2 {
			t.Fatalf("sample %d incomplete: %+v", i, s)
		}
		if !s.Nodes[1].Up {
			sawDown = true
			if s.Nodes[1].RestartIn > 0 {
				sawRestartIn = true
			}
			if s.Nodes[1].RestartIn > 1.01 {
				t.Errorf("sample %d: node 1 restarts in %v s, the step says 1 s", i, s.Nodes[1].RestartIn)
			}
		}
	}
	// The countdown shows between the kill step's end and the restart:
	// under 1 s, which a starved lab process may sample once or not at
	// all (its 4 Hz ticks come seconds apart then). It must show when
	// the kill window was sampled at least three times.
	evs, err := runfiles.ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	var killAt, restartAt float64
	for _, e := range evs {
		switch {
		case e.Kind == runfiles.EventFaultApply && e.Fields["fault"] == "node_kill":
			killAt = e.Elapsed
		case e.Kind == runfiles.EventFaultRevert && e.Fields["fault"] == "node_kill":
			restartAt = e.Elapsed
		}
	}
	inWindow := 0
	var timeline []string
	for _, s := range fromDisk {
		if s.Elapsed > killAt && s.Elapsed < restartAt {
			inWindow++
		}
		timeline = append(timeline, fmt.Sprintf("%.2fs up %v restart in %vs", s.Elapsed, s.Nodes[1].Up, s.Nodes[1].RestartIn))
	}
	if !sawDown || (!sawRestartIn && inWindow >= 3) {
		t.Errorf("node 1 down in the samples: %v, with a restart time: %v (killed at %.2fs, restarted at %.2fs); samples: %v", sawDown, sawRestartIn, killAt, restartAt, timeline)
	} else if !sawRestartIn {
		t.Logf("the restart countdown was not seen: only %d samples between the kill (%.2fs) and the restart (%.2fs)", inWindow, killAt, restartAt)
	}
	last := fromDisk[len(fromDisk)-1]
	if last.OfferedTotal != sum.Offered {
		t.Errorf("last sample offered %d, summary %d", last.OfferedTotal, sum.Offered)
	}
	kinds := map[string]int{}
	nodeRestarted := false
	for _, e := range evs {
		kinds[e.Kind]++
		if e.Kind == runfiles.EventChildStart && e.Detail == "node-1" && e.Fields["restart"] != nil {
			nodeRestarted = true
		}
	}
	for _, k := range []string{runfiles.EventRunStart, runfiles.EventRunEnd, runfiles.EventFaultApply, runfiles.EventFaultRevert, runfiles.EventNarration, runfiles.EventLoadFinished, runfiles.EventStage} {
		if kinds[k] == 0 {
			t.Errorf("no %s event (got %v)", k, kinds)
		}
	}
	if kinds[runfiles.EventChildStart] < 4 || !nodeRestarted {
		t.Errorf("child starts %d, node-1 restarted %v", kinds[runfiles.EventChildStart], nodeRestarted)
	}
	run, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Partial || run.Info == nil || run.Summary.Offered != sum.Offered || len(run.Info.Resolved.Nodes) != 2 {
		t.Errorf("read back: partial %v info %v offered %d", run.Partial, run.Info != nil, run.Summary.Offered)
	}
	if run.Info != nil && run.Info.Resolved.Tick.D() != experiment.DefaultTick {
		t.Errorf("run.json tick %v, want the default %v", run.Info.Resolved.Tick.D(), experiment.DefaultTick)
	}
	if run.Info != nil && run.Info.Machine.Cores == 0 {
		t.Errorf("run.json machine: %+v", run.Info.Machine)
	}
	if rep, err := os.ReadFile(filepath.Join(dir, runfiles.ReportFile)); err != nil || !strings.Contains(string(rep), "P0 success") || !strings.Contains(string(rep), "unaccounted") {
		t.Errorf("report.txt: err %v\n%s", err, rep)
	}
	for _, f := range []string{"logs/node-0.log", "logs/node-1.log", "logs/gateway-0.log"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	var buf bytes.Buffer
	if err := runfiles.WriteReport(&buf, []*runfiles.Run{run}); err != nil || !strings.Contains(buf.String(), "P0 success") {
		t.Errorf("report: %v\n%s", err, buf.String())
	}
}

// TestControls drives a lab the way the dashboard does: samples, rate,
// defenses, faults, recording, lesson steps, stop.
func TestControls(t *testing.T) {
	exp := mustParse(t, `
name: controls
duration: forever
stages: [{duration: 1s, target: 50}]
mix: {routes: {predict: 1}}
nodes:
  count: 2
  knobs: {slots: 8, latency: {dist: fixed, fixed_ms: 50}}
faults:
  - {at: 1h, fault: model_latency, params: {node: -1, multiplier: 2}}
narration:
  - {at: 0s, kind: predict, text: "one", predict: {metric: p0_success_rate}}
  - {at: 1h, kind: watch, text: "two"}
  - {at: 2h, kind: explain, text: "three"}
`)
	runs := t.TempDir()
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop(context.Background())
	var c Controls = l
	ch := c.Samples()
	next := func() runfiles.Sample {
		t.Helper()
		select {
		case s, ok := <-ch:
			if !ok {
				t.Fatal("samples closed")
			}
			return s
		case <-time.After(5 * time.Second):
			t.Fatal("no sample in 5 s")
		}
		return runfiles.Sample{}
	}
	waitFor := func(what string, f func(runfiles.Sample) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if f(next()) {
				return
			}
		}
		t.Fatalf("%s: not seen in 10 s", what)
	}
	waitFor("load", func(s runfiles.Sample) bool { return s.GoodputRPS > 0 })

	// Rate: a manual override pauses the ramp; resuming returns to it.
	if err := c.SetRate(20); err != nil {
		t.Fatal(err)
	}
	if !c.RampPaused() {
		t.Error("SetRate did not pause the ramp")
	}
	waitFor("manual rate", func(s runfiles.Sample) bool { return s.TargetRPS == 20 })
	c.PauseRamp(false)
	waitFor("schedule rate", func(s runfiles.Sample) bool { return s.TargetRPS == 50 })
	c.Spike(2, time.Second)
	waitFor("spike", func(s runfiles.Sample) bool { return s.TargetRPS == 100 })

	// Defenses go to the gateway and come back in its metrics.
	if err := c.SetDefense("moat", true); err == nil {
		t.Error("unknown defense accepted")
	}
	if err := c.SetDefense("guard", false); err != nil {
		t.Fatal(err)
	}
	if c.Defenses()["guard"] {
		t.Error("Defenses still has guard on")
	}
	waitFor("guard off in samples", func(s runfiles.Sample) bool { on, ok := s.Defenses["guard"]; return ok && !on })

	// Faults: the experiment's parameters are used by the toggle.
	if err := c.ToggleFault("meteor"); err == nil {
		t.Error("unknown fault accepted")
	}
	if err := c.ToggleFault("model_latency"); err != nil {
		t.Fatal(err)
	}
	waitFor("fault active", func(s runfiles.Sample) bool { return len(s.Faults) == 1 && s.Faults[0].Name == "model_latency" })
	knobs, err := l.sup.NodeKnobs(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if knobs["latency_multiplier"] != 2.0 {
		t.Errorf("node knobs after model_latency: %v", knobs["latency_multiplier"])
	}
	active := 0
	keys := map[string]bool{}
	for i, f := range c.Faults() {
		if f.Active {
			active++
		}
		// Every fault has its own key, the eleventh too.
		if f.Key == "" || f.Key != FaultKey(i) || keys[f.Key] {
			t.Errorf("fault %d %s: key %q, want %q, once", i+1, f.Name, f.Key, FaultKey(i))
		}
		keys[f.Key] = true
	}
	if active != 1 {
		t.Errorf("%d faults active", active)
	}
	if err := c.ToggleFault("model_latency"); err != nil {
		t.Fatal(err)
	}
	waitFor("fault reverted", func(s runfiles.Sample) bool { return len(s.Faults) == 0 })

	// Lesson: the first step shows at 0 s and asks for its number (answered
	// before any recording: the recording below still carries it); NextStep
	// moves on by hand.
	if ls := c.Lesson(); ls.Step != 1 || ls.Steps != 3 || ls.Kind != "predict" || ls.Ask == nil || ls.Ask.Unit != "%" {
		t.Errorf("lesson %+v", ls)
	}
	if err := c.Predict(PredictionAnswer{Step: 1, Value: 42}); err != nil {
		t.Fatal(err)
	}
	c.NextStep()
	if ls := c.Lesson(); ls.Step != 2 || ls.Text != "two" {
		t.Errorf("after NextStep: %+v", ls)
	}

	// Recording from the dashboard writes the same files.
	if c.Recording() {
		t.Error("recording before StartRecording")
	}
	dir, err := c.StartRecording()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartRecording(); err == nil {
		t.Error("second StartRecording accepted")
	}
	// Four recorded ticks with answers in them, however slow the machine.
	for n := 0; n < 4; {
		if s := next(); s.Recording && s.GoodputRPS > 0 {
			n++
		}
	}
	if err := c.StopRecording(); err != nil {
		t.Fatal(err)
	}
	run, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Partial || run.Summary.Offered == 0 || run.Summary.Outcomes[wire.OutcomeOK.String()] == 0 || run.Summary.Ended != "recording stopped" {
		t.Errorf("recording summary: %+v", run.Summary)
	}
	if ps := run.Predictions; len(ps) != 1 || ps[0].Predicted == nil || *ps[0].Predicted != 42 || ps[0].Metric != "p0_success_rate" {
		t.Errorf("the prediction made before recording is not in the run: %+v", ps)
	}
	if !strings.HasPrefix(dir, runs) {
		t.Errorf("recording in %s, not under %s", dir, runs)
	}

	pids := l.ChildPIDs()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for range ch { // drains, then the channel is closed
	}
	waitGone(t, pids, 5*time.Second)
	if _, ok := <-l.Samples(); ok {
		t.Error("Samples after Stop delivered a sample")
	}
}

// TestOOMKill gives the gateway a pod limit below its RSS: the lab kills
// it, counts the kill, logs it and restarts it.
func TestOOMKill(t *testing.T) {
	exp := mustParse(t, `
name: oom
duration: 3s
stages: [{duration: 3s, target: 20}]
mix: {routes: {predict: 1}}
nodes: {count: 1, knobs: {slots: 8, latency: {dist: fixed, fixed_ms: 20}}}
gateway: {memory_limit_mb: 16, restart_delay: 300ms}
thresholds: {oom_kills: "== 0", unaccounted: "== 0"}
`)
	dir := filepath.Join(t.TempDir(), "run")
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, Record: true, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(); err != nil {
		t.Fatal(err)
	}
	sum := l.Summary()
	if sum.Gateway.OOMKills < 1 || sum.Thresholds["oom_kills"].Pass {
		t.Fatalf("oom kills %d, threshold %+v", sum.Gateway.OOMKills, sum.Thresholds["oom_kills"])
	}
	if sum.Unaccounted != 0 {
		t.Errorf("unaccounted %d", sum.Unaccounted)
	}
	// The gateway was killed at a reading at or above its limit: the
	// largest RSS the run reports is that reading, not the last one a
	// tick happened to see before the kill (always under the limit).
	if limit := 16.0 * (1 << 20); sum.Gateway.MaxRSSBytes < limit {
		t.Errorf("max RSS %.1f MB, under the 16 MB limit its gateway was OOM-killed at", sum.Gateway.MaxRSSBytes/(1<<20))
	}
	evs, err := runfiles.ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	ooms, restarts := 0, 0
	for _, e := range evs {
		switch {
		case e.Kind == runfiles.EventOOMKill:
			ooms++
		case e.Kind == runfiles.EventChildStart && e.Fields["restart"] == "oom":
			restarts++
		}
	}
	if ooms != sum.Gateway.OOMKills || restarts < 1 {
		t.Errorf("oom events %d (summary %d), restarts %d", ooms, sum.Gateway.OOMKills, restarts)
	}
}

// TestKilledRunLeavesNoOrphans SIGKILLs `levee run` midway: every child it
// started must die with it, and samples.jsonl must read back.
func TestKilledRunLeavesNoOrphans(t *testing.T) {
	tmp := t.TempDir()
	expPath := filepath.Join(tmp, "long.yaml")
	if err := os.WriteFile(expPath, []byte(`
name: long
duration: 60s
stages: [{duration: 60s, target: 100}]
mix: {routes: {predict: 1}}
nodes: {count: 2, knobs: {slots: 8, latency: {dist: fixed, fixed_ms: 50}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	cmd := exec.Command(leveeBin, "run", "--quiet", "--out", dir, expPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	// Wait for a few samples.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n := countLines(filepath.Join(dir, runfiles.SamplesFile)); n >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no samples after 30 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	evs, err := runfiles.ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, e := range evs {
		if e.Kind == runfiles.EventChildStart {
			if pid, ok := e.Fields["pid"].(float64); ok {
				pids[e.Detail] = int(pid)
			}
		}
	}
	if len(pids) != 3 {
		t.Fatalf("child pids from events: %v", pids)
	}
	for name, pid := range pids {
		if processGone(pid) {
			t.Fatalf("%s (pid %d) not running before the kill", name, pid)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	waitGone(t, pids, 5*time.Second)

	samples, err := runfiles.ReadSamples(dir)
	if err != nil {
		t.Fatalf("samples after kill -9: %v", err)
	}
	if len(samples) < 6 {
		t.Errorf("%d samples read back", len(samples))
	}
	run, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Partial || run.Summary.Offered == 0 {
		t.Errorf("killed run read back: partial %v offered %d", run.Partial, run.Summary.Offered)
	}
}

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// TestOpenFailsCleanly: a child that cannot start fails Open with its log,
// and leaves nothing running.
func TestOpenFailsCleanly(t *testing.T) {
	exp := mustParse(t, "name: x\nduration: 1s\nnodes: {count: 1}\n")
	_, err := Open(context.Background(), exp, Options{Executable: "/bin/false", WorkDir: t.TempDir(), ReadyTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "node-0") {
		t.Fatalf("err = %v", err)
	}
	_, err = Open(context.Background(), nil, Options{})
	if err == nil {
		t.Fatal("nil experiment accepted")
	}
}

// TestRedisAutoTwoGateways: `redis: auto` starts redis-server — or, where
// it is not installed (PATH hidden here), the embedded server as its own
// child — two gateways share their rate limits through it, the generator
// spreads load over both, and a Redis outage (a real SIGKILL of either)
// fails no request. The summary says which Redis it was.
func TestRedisAutoTwoGateways(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		hide       bool // hide redis-server from PATH
	}{
		{"redis-server", "server", false},
		{"embedded", "embedded", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.hide {
				t.Setenv("PATH", t.TempDir())
			} else {
				redistest.Need(t)
			}
			testRedisAuto(t, tc.kind)
		})
	}
}

func testRedisAuto(t *testing.T, kind string) {
	exp := mustParse(t, `
name: redis
duration: 4s
stages: [{duration: 4s, target: 300}]
mix: {routes: {predict: 1}}
nodes: {count: 2, knobs: {slots: 32, latency: {dist: fixed, fixed_ms: 20}}}
gateway:
  count: 2
  # The rate limit alone: the claim is that Redis dying fails no request.
  # The nodes' breaker, on a machine starved enough to time calls out,
  # answers "no healthy node" (an error that says nothing about Redis).
  defenses: {ratelimit: true, guard: false, bulkhead: false, budget: false, breaker: false, retry: false, fallback: false}
  config:
    ratelimit:
      rules: [{tenant: "*", route: "*", algorithm: token_bucket, replenish_rate: 40, burst: 40, cost: requests}]
redis: auto
faults:
  - {at: 1500ms, fault: redis_outage, params: {for: 0s}, for: 1s}
`)
	dir := filepath.Join(t.TempDir(), "run")
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, Record: true, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	pids := l.ChildPIDs()
	if pids["redis"] == 0 || len(pids) != 5 {
		t.Fatalf("children %v", pids)
	}
	if err := l.Wait(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids, 5*time.Second)
	s := l.Summary()
	t.Logf("outcomes %v, shed check %+v", s.Outcomes, s.ShedCheck)
	if s.Unaccounted != 0 || s.Outcomes[wire.OutcomeError.String()] != 0 {
		t.Errorf("unaccounted %d errors %d", s.Unaccounted, s.Outcomes[wire.OutcomeError.String()])
	}
	// Three tenants at 40 req/s each, shared by both gateways: most of the
	// 300 req/s is refused by the rate limit.
	if s.Outcomes[wire.OutcomeShedRateLimit.String()] == 0 || s.Outcomes[wire.OutcomeOK.String()] == 0 {
		t.Errorf("outcomes %v", s.Outcomes)
	}
	// Equal counts, but for requests the client timed out on (a loaded
	// machine): the gateway may have shed those after the client left.
	if !s.ShedCheck.Exact || s.ShedCheck.Mismatch != 0 {
		t.Errorf("shed check %+v", s.ShedCheck)
	}
	if s.Redis.Kind != kind || !strings.HasPrefix(s.Redis.Addr, "127.0.0.1:") {
		t.Errorf("summary redis %+v, want kind %s on loopback", s.Redis, kind)
	}
	if s.Redis.Fallbacks <= 0 {
		t.Errorf("summary redis %+v: no local decision counted through a 1 s outage", s.Redis)
	}
	if s.RateLimit == nil || s.RateLimit.ByPriority["P2"].LimitRPS != 40 {
		t.Fatalf("rate-limit summary %+v, want each priority's global limit of 40/s", s.RateLimit)
	}
	// The generator ran the exact reference limiter on the same requests,
	// and every span judged is judged against it (within the lessons'
	// bound through an outage: the token bucket's burst lets a short span
	// pass more than 40/s, so the limit is no bound here).
	judged := 0
	for p, c := range s.RateLimit.ByPriority {
		for _, sp := range []runfiles.LimitSpan{c.Steady, c.Faults} {
			if sp.Seconds > 0 {
				judged++
				if sp.ReferenceRPS <= 0 || math.Abs(sp.AdmittedRPS/sp.ReferenceRPS-1-sp.Error) > 1e-3 || math.Abs(sp.Error) > 0.25 {
					t.Errorf("%s: span %+v: want an error against a reference, within ±25 %%", p, sp)
				}
			}
		}
	}
	if judged == 0 {
		t.Errorf("rate-limit summary %+v: no span judged", s.RateLimit)
	}
	info, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.Info == nil || !strings.HasPrefix(info.Info.Resolved.Redis, "redis://127.0.0.1:") || len(info.Info.Resolved.Gateways) != 2 {
		t.Errorf("resolved %+v", info.Info)
	}
	if info.Summary == nil || info.Summary.Redis.Kind != kind {
		t.Errorf("summary.json redis: %+v", info.Summary)
	}
	// Killed before its summary, the run's global limit is rebuilt from
	// its samples and events as the finished summary measured it (to the
	// millisecond the samples' elapsed times are rounded to).
	if err := os.Remove(filepath.Join(dir, runfiles.SummaryFile)); err != nil {
		t.Fatal(err)
	}
	killed, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if killed.Summary == nil || killed.Summary.RateLimit == nil {
		t.Fatalf("rebuilt summary %+v: no global limit", killed.Summary)
	}
	for p, want := range s.RateLimit.ByPriority {
		got := killed.Summary.RateLimit.ByPriority[p]
		for _, pair := range [][2]runfiles.LimitSpan{{got.Steady, want.Steady}, {got.Faults, want.Faults}} {
			g, w := pair[0], pair[1]
			if math.Abs(g.Seconds-w.Seconds) > 0.01 || math.Abs(g.Error-w.Error) > 1e-3 || math.Abs(g.ReferenceRPS-w.ReferenceRPS) > 0.005*w.ReferenceRPS {
				t.Errorf("%s: rebuilt %+v, the summary measured %+v", p, g, w)
			}
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "logs", "redis.log")); err != nil || st.Size() == 0 {
		t.Errorf("redis log: %v", err)
	}
	evs, _ := runfiles.ReadEvents(dir)
	applied := false
	for _, e := range evs {
		if e.Kind == runfiles.EventFaultApply && e.Fields["fault"] == "redis_outage" {
			applied = true
		}
	}
	if !applied {
		t.Error("redis_outage never applied")
	}
}

// An experiment that declares Redis and cannot have it fails, saying what
// is missing, before any other child starts: a lesson about shared limits
// never passes on in-process ones.
func TestRedisDeclaredButMissingFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server
	for _, tc := range []struct{ redis, want string }{
		{"server", "redis-server"},
		{"cluster", "no embedded cluster"},
	} {
		t.Run(tc.redis, func(t *testing.T) {
			exp := mustParse(t, "name: x\nduration: 2s\nnodes: {count: 1}\nredis: "+tc.redis+"\n")
			l, err := Open(context.Background(), exp, Options{Executable: leveeBin, WorkDir: t.TempDir(), ReadyTimeout: 5 * time.Second})
			if err == nil {
				pids := l.ChildPIDs()
				_ = l.Stop(context.Background())
				t.Fatalf("redis: %s without redis-server started a lab (children %v)", tc.redis, pids)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestRedisClusterMasterKill: `redis: cluster` starts a real Redis Cluster
// (3 masters, a replica each), the gateways share limits through it with
// the cluster client, redis_master_kill SIGKILLs the busiest master
// mid-run, a replica takes its slots over (recorded in the summary), and
// nothing goes unaccounted or fails.
func TestRedisClusterMasterKill(t *testing.T) {
	redistest.Need(t)
	exp := mustParse(t, `
name: cluster
duration: 6s
stages: [{duration: 6s, target: 200}]
mix: {routes: {predict: 1}}
nodes: {count: 1, knobs: {slots: 64, latency: {dist: fixed, fixed_ms: 10}}}
gateway:
  count: 2
  # The rate limit alone: the claim is that Redis dying fails no request.
  # The nodes' breaker, on a machine starved enough to time calls out,
  # answers "no healthy node" (an error that says nothing about Redis).
  defenses: {ratelimit: true, guard: false, bulkhead: false, budget: false, breaker: false, retry: false, fallback: false}
  config:
    ratelimit:
      store: {timeout: 1s}
      rules: [{tenant: "*", route: "*", algorithm: sliding_window, limit: 30, window: 1s, cost: requests}]
redis: {kind: cluster, masters: 3, replicas: 1}
faults:
  - {at: 1500ms, fault: redis_master_kill, params: {master: -1, for: 0s}}
`)
	dir := filepath.Join(t.TempDir(), "run")
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, Record: true, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	pids := l.ChildPIDs()
	for i := range 6 {
		if pids[fmt.Sprintf("redis-%d", i)] == 0 {
			t.Errorf("no redis-%d among the children %v", i, pids)
		}
	}
	if r := l.Redis(); r.Kind != "cluster" || r.Nodes != 6 || r.Up != 6 {
		t.Errorf("redis status %+v, want a cluster of 6 up", r)
	}
	for _, f := range l.Faults() {
		switch f.Name {
		case "redis_master_kill":
			if f.Unavailable != "" {
				t.Errorf("redis_master_kill unavailable on a cluster: %s", f.Unavailable)
			}
		case "redis_outage":
			if !strings.Contains(f.Unavailable, "redis_master_kill") {
				t.Errorf("redis_outage on a cluster: unavailable %q, want a pointer to redis_master_kill", f.Unavailable)
			}
		}
	}
	if err := l.Wait(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids, 5*time.Second)
	s := l.Summary()
	t.Logf("outcomes %v; redis %+v", s.Outcomes, s.Redis)
	if s.Unaccounted != 0 || s.Outcomes[wire.OutcomeError.String()] != 0 {
		t.Errorf("unaccounted %d errors %d", s.Unaccounted, s.Outcomes[wire.OutcomeError.String()])
	}
	if s.Redis.Kind != "cluster" || len(s.Redis.Failovers) != 1 {
		t.Fatalf("summary redis %+v, want one failover of the cluster", s.Redis)
	}
	f := s.Redis.Failovers[0]
	if f.By == "" || f.By == f.Killed || f.AfterS <= 0 {
		t.Errorf("failover %+v: want a replica that took over after some time", f)
	}
	if s.Outcomes[wire.OutcomeShedRateLimit.String()] == 0 {
		t.Errorf("nothing shed by the shared limit: %v", s.Outcomes)
	}
}
