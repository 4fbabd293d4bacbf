package plan

// This is the one file of package plan that knows where the run-file and
// experiment types live (package lab today). After the lab's restructure
// it is the only file to point at lab/runfiles and lab/experiment.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/lab"
)

type (
	experiment = lab.Experiment
	sample     = lab.Sample
	summary    = lab.Summary
	runInfo    = lab.RunInfo
)

// Defaults are the inputs a plan from flags starts with, each marked as a
// default: the default lab's tokens per call and client timeout, and the
// gateway's agent fan-out. Flags override them.
func Defaults() Inputs {
	e, a := lab.DefaultExperiment(), gateway.DefaultConfig().Agent
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
// run.json or samples.jsonl that is there but does not decode.
func readRecorded(dir string) (*recorded, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("run folder %s: not a folder (want the folder a run left: runs/<time>-<name>)", dir)
	}
	r := &recorded{dir: dir}
	if b, err := os.ReadFile(filepath.Join(dir, lab.RunFile)); err == nil {
		var info runInfo
		if err := json.Unmarshal(b, &info); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, lab.RunFile), err)
		}
		r.info = &info
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	run, err := lab.ReadRun(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("run folder %s: no %s and no %s: not a run folder", dir, lab.SummaryFile, lab.SamplesFile)
		}
		return nil, err
	}
	r.summary, r.partial = run.Summary, run.Partial
	samples, err := lab.ReadSamples(dir)
	switch {
	case err == nil:
		r.samples = samples
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	return r, nil
}

// lessonGatewayConfig is the part of the gateway config a lesson sets
// (limits, then raw config), as the lab generates it, with a stand-in
// upstream so that it parses. Used only when a run left no run.json. (Once
// the experiment package exports its GatewayConfig, call that instead.)
func lessonGatewayConfig(e *experiment) map[string]any {
	m := map[string]any{"upstream": map[string]any{"nodes": []any{"127.0.0.1:1"}}}
	if len(e.Gateway.Defenses) > 0 {
		d := map[string]any{}
		for k, v := range e.Gateway.Defenses {
			d[k] = v
		}
		m["defenses"] = d
	}
	for k, v := range deepCopy(e.Gateway.Limits) {
		if k != "classes" {
			m[k] = v
			continue
		}
		classes := map[string]any{}
		cm, _ := v.(map[string]any)
		for name, cv := range cm {
			c := map[string]any{}
			cc, _ := cv.(map[string]any)
			for ck, x := range cc {
				if ck == "queue_timeout_ms" {
					ck, x = "queue_timeout", fmt.Sprintf("%vms", x)
				}
				c[ck] = x
			}
			classes[name] = c
		}
		m["classes"] = classes
	}
	merge(m, deepCopy(e.Gateway.Config))
	return m
}

// deepCopy copies a decoded YAML map, so that merging never writes into
// the experiment's own maps.
func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok {
			v = deepCopy(vm)
		}
		out[k] = v
	}
	return out
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			merge(dm, sm)
			continue
		}
		dst[k] = v
	}
}
