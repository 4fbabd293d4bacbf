package plan

// This is the one file of package plan that knows where the run-file and
// experiment types live (lab/runfiles, lab/experiment).

import (
	"errors"
	"fmt"
	"os"

	"github.com/levee-lab/levee/gateway"
	exp "github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

type (
	experiment = exp.Experiment
	sample     = runfiles.Sample
	summary    = runfiles.Summary
	runInfo    = runfiles.RunInfo
)

// Defaults are the inputs a plan from flags starts with, each marked as a
// default: the default lab's tokens per call and client timeout, and the
// gateway's agent fan-out. Flags override them.
func Defaults() Inputs {
	e, a := exp.DefaultExperiment(), gateway.DefaultConfig().Agent
	return Inputs{
		PromptTokens:   Of(float64(e.Mix.PromptTokens.Min+e.Mix.PromptTokens.Max)/2, FromDefault),
		MaxTokens:      Of(e.Mix.MaxTokens, FromDefault),
		Budget:         Of(e.ClientTimeout.D(), FromDefault),
		SubTasks:       Of(a.FanOut, FromGateway),
		YellowSubTasks: Of(a.YellowFanOut, FromGateway),
		RedSubTasks:    Of(a.RedFanOut, FromGateway),
	}
}

// recorded is a run folder read back: run.json (nil when the folder has
// none, like the reference runs), the summary (rebuilt from the samples for
// a killed run) and the samples (nil when not recorded).
type recorded struct {
	dir     string
	info    *runInfo
	summary *summary
	partial bool
	samples []sample
}

// readRecorded reads a run folder. A folder that is missing, is not a
// folder, or has neither summary.json nor samples is an error; so is a
// run.json or samples.jsonl that is there but does not decode, and a
// run.json whose experiment fails an experiment file's checks
// (runfiles.ReadRunInfo).
func readRecorded(dir string) (*recorded, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("run folder %s: not a folder (want the folder a run left: runs/<time>-<name>)", dir)
	}
	r := &recorded{dir: dir}
	// The experiment run.json holds is checked as an experiment file is.
	if info, err := runfiles.ReadRunInfo(dir); err == nil {
		r.info = info
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	run, err := runfiles.ReadRun(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("run folder %s: no %s and no %s: not a run folder", dir, runfiles.SummaryFile, runfiles.SamplesFile)
		}
		return nil, err
	}
	r.summary, r.partial = run.Summary, run.Partial
	samples, err := runfiles.ReadSamples(dir)
	switch {
	case err == nil:
		r.samples = samples
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	return r, nil
}

// lessonGatewayConfig is the gateway config a lesson makes, as the lab
// generates it, with stand-in listeners and upstream. Used only when a run
// left no run.json.
func lessonGatewayConfig(e *experiment) (gateway.Config, error) {
	cfg, _, err := e.GatewayConfig(exp.GatewayParams{
		Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Token: standInToken,
		Nodes: []string{"127.0.0.1:1"}, Keys: exp.APIKeys(standInToken),
		Defenses: e.Gateway.Defenses, Gateways: e.Gateway.Count,
	})
	return cfg, err
}
