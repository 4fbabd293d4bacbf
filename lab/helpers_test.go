package lab

import (
	"context"
	"fmt"
	"testing"

	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

// openLab opens a lab on exp whose children are leveeBin, with no report
// writers (opts.Reports is ignored), and stops it when the test ends.
func openLab(t *testing.T, exp *experiment.Experiment, opts Options) *Lab {
	t.Helper()
	opts.Executable, opts.Reports = leveeBin, []runfiles.ReportWriter{}
	l, err := Open(context.Background(), exp, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Stop(context.Background()) })
	return l
}

// readRun reads the run folder dir back, failing the test on an error.
func readRun(t *testing.T, dir string) *runfiles.Run {
	t.Helper()
	run, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// checkExact reports an error unless every offered request of sum ended in
// exactly one outcome: every outcome name present, Σ outcomes = offered >
// 0, and nothing unaccounted.
func checkExact(t *testing.T, sum *runfiles.Summary) {
	t.Helper()
	var outs uint64
	for _, o := range load.Outcomes {
		if _, ok := sum.Outcomes[o]; !ok {
			t.Errorf("summary.outcomes lacks %s", o)
		}
		outs += sum.Outcomes[o]
	}
	if sum.Offered == 0 || outs != sum.Offered || sum.Unaccounted != 0 {
		t.Errorf("offered %d, Σ outcomes %d, unaccounted %d", sum.Offered, outs, sum.Unaccounted)
	}
}

// foreverLab is an experiment that runs until stopped: rate req/s of
// predict calls from the first second on, to one node of 8 slots answering
// in latencyMs; extra is more top-level YAML (client_timeout, gateway…).
func foreverLab(t *testing.T, name string, rate, latencyMs int, extra string) *experiment.Experiment {
	t.Helper()
	return mustParse(t, fmt.Sprintf(`
name: %s
duration: forever
start_rate: %d
stages: [{duration: 1s, target: %d}]
mix: {routes: {predict: 1}}
nodes:
  count: 1
  knobs: {slots: 8, latency: {dist: fixed, fixed_ms: %d}}
%s`, name, rate, rate, latencyMs, extra))
}
