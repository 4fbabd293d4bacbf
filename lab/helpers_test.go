package lab

import (
	"context"
	"testing"

	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

// parseExp parses an experiment a test writes out, failing the test on an
// error.
func parseExp(t *testing.T, yamlText string) *experiment.Experiment {
	t.Helper()
	exp, err := experiment.ParseExperiment([]byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

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
// exactly one outcome: Σ outcomes = offered > 0, and nothing unaccounted.
func checkExact(t *testing.T, sum *runfiles.Summary) {
	t.Helper()
	var outs uint64
	for _, o := range load.Outcomes {
		outs += sum.Outcomes[o]
	}
	if sum.Offered == 0 || outs != sum.Offered || sum.Unaccounted != 0 {
		t.Errorf("offered %d, Σ outcomes %d, unaccounted %d", sum.Offered, outs, sum.Unaccounted)
	}
}
