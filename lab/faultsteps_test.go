package lab

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/lab/runfiles"
)

// stepEnv is a chaos.Env for the timeline worker alone: a lab of two
// nodes with no Redis, whose node 1 cannot be restarted.
type stepEnv struct{}

var errNoRedis = errors.New("lab: this lab has no Redis")

func (stepEnv) NodeCount() int { return 2 }
func (stepEnv) PatchNodeKnobs(_ context.Context, _ int, patch map[string]any) (map[string]any, error) {
	prev := map[string]any{}
	for k := range patch {
		prev[k] = 0
	}
	return prev, nil
}
func (stepEnv) KillNode(context.Context, int) error { return nil }
func (stepEnv) RestartNode(_ context.Context, node int) error {
	if node == 1 {
		return errors.New("node 1 did not come back")
	}
	return nil
}
func (stepEnv) PatchGatewayPressure(context.Context, map[string]any) error { return nil }
func (stepEnv) SetRateFactor(float64)                                      {}
func (stepEnv) SetSlowClients(float64, float64)                            {}
func (stepEnv) KillRedis(context.Context) error                            { return errNoRedis }
func (stepEnv) RestartRedis(context.Context) error                         { return errNoRedis }
func (stepEnv) KillRedisMaster(context.Context, int) (int, error)          { return 0, errNoRedis }
func (stepEnv) RestartRedisNode(context.Context, int) error                { return errNoRedis }
func (stepEnv) After(time.Duration, func())                                {}

// TestFaultStepErrors: the timeline's actions that fail — an apply the lab
// cannot do, a revert that fails — are kept, in order, naming the fault;
// the ones that succeed are not.
func TestFaultStepErrors(t *testing.T) {
	cases := []struct {
		name    string
		actions []chaos.Action
		want    []string // substrings of each error, in order
	}{
		{"all succeed", []chaos.Action{
			{Fault: "model_latency", At: time.Second},
			{Fault: "model_latency", At: 2 * time.Second, Revert: true},
		}, nil},
		{"apply fails", []chaos.Action{
			{Step: 0, Fault: "redis_outage", At: 5 * time.Second},
		}, []string{"faults.0 (redis_outage): apply at 5s: chaos: redis_outage: lab: this lab has no Redis"}},
		{"apply then revert fail", []chaos.Action{
			{Step: 0, Fault: "model_latency", At: time.Second, Params: []byte(`{"node":1}`)},
			{Step: 1, Fault: "node_kill", At: 2 * time.Second, Params: []byte(`{"node":1,"for":"0s"}`)},
			{Step: 1, Fault: "node_kill", At: 3 * time.Second, Revert: true},
			{Step: 2, Fault: "redis_master_kill", At: 4 * time.Second},
		}, []string{"faults.1 (node_kill): revert at 3s: ", "node 1 did not come back", "faults.2 (redis_master_kill): apply at 4s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := &Lab{ctx: context.Background(), stepCtx: context.Background(), timelineDone: make(chan struct{}),
				finishing: make(chan struct{}), faultErrs: map[string]string{}}
			l.ctl = chaos.NewController(chaos.Default, stepEnv{})
			actions := make(chan chaos.Action, len(c.actions))
			for _, a := range c.actions {
				actions <- a
			}
			close(actions)
			l.timelineWorker(actions)
			got := l.FaultStepErrors()
			var text []string
			for _, err := range got {
				text = append(text, err.Error())
			}
			joined := strings.Join(text, "\n")
			for _, w := range c.want {
				if !strings.Contains(joined, w) {
					t.Errorf("errors %q lack %q", text, w)
				}
			}
			wantN := map[string]int{"all succeed": 0, "apply fails": 1, "apply then revert fail": 2}[c.name]
			if len(got) != wantN {
				t.Errorf("%d errors %q, want %d", len(got), text, wantN)
			}
		})
	}
}

// TestFaultStepFailureRecorded: a real run whose fault step fails (a
// Redis outage that cannot end: its port was taken meanwhile) plays on,
// and
// its summary and events say which step failed; the summary does not pass.
func TestFaultStepFailureRecorded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	exp := mustParse(t, `
name: stepfail
duration: 2s
start_rate: 20
nodes: {count: 1}
redis: embedded
faults:
  - {at: 300ms, fault: redis_outage, params: {for: 0s}, for: 500ms}
`)
	// The schedule runs on a fake clock, held between the outage (300 ms)
	// and its revert (800 ms) until the port is taken (on the real clock a
	// starved test could miss that half second), then run to its end at
	// once: the revert's attempts to start Redis are still under way when
	// the run ends, and the end must wait for them. It did not: the step
	// failed after the summary was written, and the summary passed.
	fc := clockwork.NewFakeClock()
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, Record: true, Out: dir, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	fc.Advance(500 * time.Millisecond) // past the outage, before its revert
	// While Redis is down, something else takes its port: the step's
	// revert cannot start Redis again there, a failure no check at load
	// can see.
	addr := l.Redis().Addr
	var squatter net.Listener
	for deadline := time.Now().Add(20 * time.Second); squatter == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		squatter, _ = net.Listen("tcp", addr)
	}
	if squatter == nil {
		t.Fatalf("Redis's port %s never came free", addr)
	}
	defer squatter.Close()
	go func() { // it speaks no Redis: a PING meant for Redis is cut at once
		for {
			c, err := squatter.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// Play the rest of the run (the revert at 800 ms, the end at 2 s).
	playOnFakeClock(t, l, fc)
	sum := l.Summary()
	if sum == nil {
		t.Fatal("no summary")
	}
	const want = "faults.0 (redis_outage): revert at 800ms: "
	if len(sum.FaultStepErrors) != 1 || !strings.HasPrefix(sum.FaultStepErrors[0], want) {
		t.Errorf("summary fault_step_errors %q, want one starting %q", sum.FaultStepErrors, want)
	}
	if sum.Pass {
		t.Error("summary passes although a fault step failed")
	}
	run, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Summary.FaultStepErrors; len(got) != 1 {
		t.Errorf("summary.json fault_step_errors %q, want one", got)
	}
	txt, err := os.ReadFile(filepath.Join(dir, runfiles.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(txt), "stepfail: fault steps that failed\n  ✗ "+want) {
		t.Errorf("report.txt does not list the failed step:\n%s", txt)
	}
	evs, err := runfiles.ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		if e.Kind == runfiles.EventError && e.Fields["step"] == "faults.0" && e.Fields["action"] == chaos.ActionRevert {
			found = true
		}
	}
	if !found {
		t.Errorf("events.jsonl has no error event for step faults.0: %+v", evs)
	}
}

// TestKnobFaultWithoutNodeKnobs: an experiment that sets no node knobs
// (the defaults) takes a knob fault, on a node that is up and on one that
// is down (it gets the patch when it restarts). The supervisor's copy of
// no knobs was a nil map, and the first patch panicked merging into it.
func TestKnobFaultWithoutNodeKnobs(t *testing.T) {
	exp := mustParse(t, `
name: plainknobs
duration: 1500ms
start_rate: 20
nodes: {count: 2}
faults:
  - {at: 100ms, fault: node_kill, params: {node: 1}, for: 800ms}
  - {at: 300ms, fault: model_slots, params: {slots: 3}}
`)
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(); err != nil {
		t.Fatal(err)
	}
	if errs := l.FaultStepErrors(); len(errs) != 0 {
		t.Errorf("fault steps failed: %q", errs)
	}
}

// playOnFakeClock advances fc in 50 ms steps until l's run ends (a fatal
// error after 60 s of real time) and fails the test if Wait does.
func playOnFakeClock(t *testing.T, l *Lab, fc *clockwork.FakeClock) {
	t.Helper()
	waited := make(chan error, 1)
	go func() { waited <- l.Wait() }()
	for deadline, ended := time.Now().Add(60*time.Second), false; !ended; {
		fc.Advance(50 * time.Millisecond)
		select {
		case err := <-waited:
			if err != nil {
				t.Fatal(err)
			}
			ended = true
		case <-time.After(5 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the run did not end in 60 s")
			}
		}
	}
}
