package plan

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/lab/runfiles"
)

// Parts is what a plan is made of: the inputs, and for a run the gateway's
// setup and what the run measured.
type Parts struct {
	Title string // the run's title, "" for a plan from flags
	Dir   string // the run folder, "" for a plan from flags
	// Note says where the setup came from when it is not the run's own
	// run.json (a reference folder has summary.json only).
	Note string
	// Lesson names the lesson the setup was taken from when the folder had
	// no run.json ("" otherwise).
	Lesson   string
	Inputs   Inputs
	Setup    *Setup    // nil for a plan from flags
	Observed *Observed // nil for a plan from flags
}

// Setup is how the run's gateway was configured (the ai route class).
type Setup struct {
	Algorithm    string // static, aimd or gradient
	Limit        int    // initial (static: fixed) concurrency limit, per gateway
	Min, Max     int
	QueueSize    int
	QueueTimeout time.Duration
	TokenBudget  int64
	MaxSubcalls  int // agent amplification cap, sub-calls in flight per gateway
	Bulkhead     bool
	Budget       bool
	// AgentShare is the share of requests the load sends to the agent route.
	AgentShare float64
}

// Lessons finds the experiment a run was made from by its name, for run
// folders without run.json. It returns nil when there is none.
type Lessons func(name string) *experiment

// ReadRun reads a run folder: the inputs and setup from its run.json (or,
// for a folder with only summary.json, from the lesson of the same name),
// and what the run measured from its samples and summary.
func ReadRun(dir string, lessons Lessons) (Parts, error) {
	r, err := readRecorded(dir)
	if err != nil {
		return Parts{}, err
	}
	p := Parts{Dir: dir, Title: r.summary.Title}
	exp, src := (*experiment)(nil), FromRun
	var nodeKnobs, gwConfig map[string]any
	if r.info != nil && r.info.Experiment != nil {
		exp = r.info.Experiment
		nodeKnobs, gwConfig = r.info.Resolved.NodeKnobs, r.info.Resolved.GatewayConfig
	} else {
		name := r.summary.Name
		if r.info != nil && r.info.Name != "" {
			name = r.info.Name
		}
		if lessons != nil {
			exp = lessons(name)
		}
		if exp == nil {
			return Parts{}, fmt.Errorf("run folder %s: no run.json, and no lesson named %q to take the setup from: give the figures as flags instead (levee plan --help)", dir, name)
		}
		src, p.Lesson = FromLesson, name
		p.Note = fmt.Sprintf("this folder has no run.json: the setup is lesson %s's, as built into this binary", name)
	}
	if p.Title == "" {
		p.Title = exp.Title
	}
	if nodeKnobs == nil {
		nodeKnobs = exp.Nodes.Knobs
	}
	knobs, err := nodeKnobsOf(nodeKnobs)
	if err != nil {
		return Parts{}, fmt.Errorf("run folder %s: node knobs: %w", dir, err)
	}
	var cfg gateway.Config
	if gwConfig == nil {
		cfg, err = lessonGatewayConfig(exp)
	} else {
		cfg, err = gatewayConfigOf(gwConfig)
	}
	if err != nil {
		return Parts{}, fmt.Errorf("run folder %s: gateway config: %w", dir, err)
	}
	p.Inputs = inputsOf(exp, knobs, cfg, src)
	if peak := peakTarget(r.samples); peak > 0 {
		// What the load asked for as the run went: a rate set by hand, a
		// spike or a traffic_spike fault is not in the experiment's stages.
		p.Inputs.Target = Of(peak, FromSamples)
	}
	p.Setup = setupOf(exp, cfg)
	p.Observed = observe(r, knobs.Slots*exp.Nodes.Count)
	return p, nil
}

// inputsOf takes the inputs from an experiment, its nodes' knobs and its
// gateway's config.
func inputsOf(e *experiment, k fakemodel.Knobs, cfg gateway.Config, src Source) Inputs {
	p50, p99 := quantiles(k)
	in := Inputs{
		Nodes:        Of(e.Nodes.Count, src),
		SlotsPerNode: Of(k.Slots, src),
		Mean:         Of(k.MeanService(), src),
		P50:          Of(p50, src),
		P99:          Of(p99, src),
		Dist:         Of(k.Latency.Dist, src),
		Gateways:     Of(e.Gateway.Count, src),
		PromptTokens: Of(float64(e.Mix.PromptTokens.Min+e.Mix.PromptTokens.Max)/2, src),
		MaxTokens:    Of(e.Mix.MaxTokens, src),
		Budget:       Of(e.ClientTimeout.D(), src),
	}
	peak := e.StartRate
	for _, s := range e.Stages {
		peak = math.Max(peak, s.Target)
	}
	if peak > 0 {
		in.Target = Of(peak, src)
	}
	agentSrc := FromGateway
	if _, ok := e.Gateway.Config["agent"]; ok {
		agentSrc = src
	}
	in.SubTasks = Of(cfg.Agent.FanOut, agentSrc)
	in.YellowSubTasks = Of(cfg.Agent.YellowFanOut, agentSrc)
	in.RedSubTasks = Of(cfg.Agent.RedFanOut, agentSrc)
	return in
}

// quantiles are the p50 and p99 service times the knobs give a call (before
// load-dependent slow-down and per-token time).
func quantiles(k fakemodel.Knobs) (p50, p99 time.Duration) {
	l := k.Latency
	var a, b float64 // ms
	switch l.Dist {
	case fakemodel.DistFixed:
		a, b = l.FixedMs, l.FixedMs
	case fakemodel.DistUniform:
		a, b = l.MinMs+0.5*(l.MaxMs-l.MinMs), l.MinMs+0.99*(l.MaxMs-l.MinMs)
	default:
		a, b = l.P50Ms, l.P99Ms
	}
	ms := func(v float64) time.Duration {
		return time.Duration((v*k.LatencyMultiplier + k.LatencyAddMs) * float64(time.Millisecond))
	}
	return ms(a), ms(b)
}

func setupOf(e *experiment, cfg gateway.Config) *Setup {
	ai := cfg.Classes.AI
	s := &Setup{
		Algorithm: ai.Limiter.Algorithm, Limit: ai.Limiter.Limit, Min: ai.Limiter.Min, Max: ai.Limiter.Max,
		QueueSize: ai.QueueSize, QueueTimeout: ai.QueueTimeout,
		TokenBudget: cfg.TokenBudget, MaxSubcalls: cfg.Agent.MaxSubcallsInflight,
		Bulkhead: cfg.Defenses.Bulkhead, Budget: cfg.Defenses.Budget,
	}
	// The agent share: each priority's weight times its routes' agent share.
	var total, agent float64
	for p, w := range e.Mix.Priorities {
		routes := e.Mix.Routes
		if r, ok := e.Mix.RoutesByPriority[p]; ok {
			routes = r
		}
		var rt float64
		for _, v := range routes {
			rt += v
		}
		total += w
		if rt > 0 {
			agent += w * routes["agent"] / rt
		}
	}
	if total > 0 {
		s.AgentShare = agent / total
	}
	return s
}

func nodeKnobsOf(patch map[string]any) (fakemodel.Knobs, error) {
	k := fakemodel.DefaultKnobs()
	if len(patch) == 0 {
		return k, nil
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return k, err
	}
	return k.Patch(b)
}

// gatewayConfigOf parses a generated gateway config (run.json's resolved
// gateway_config) with the gateway's own parser, defaults included.
func gatewayConfigOf(m map[string]any) (gateway.Config, error) {
	b, err := yaml.Marshal(standIns(m))
	if err != nil {
		return gateway.Config{}, err
	}
	return gateway.ParseConfig(b)
}

// standInToken replaces a redacted admin token for the parser; the plan
// never talks to a gateway.
const standInToken = "plan-stand-in-admin-token"

// standIns returns a copy of a run.json gateway config whose redacted
// secrets (runfiles.Redacted: the admin token, every API key) are replaced
// by stand-ins the gateway's parser accepts: a token long enough and
// distinct keys. The plan reads neither.
func standIns(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	if out["admin_token"] == runfiles.Redacted {
		out["admin_token"] = standInToken
	}
	if keys, ok := out["keys"].([]any); ok {
		cp := make([]any, len(keys))
		for i, kv := range keys {
			cp[i] = kv
			if km, ok := kv.(map[string]any); ok && km["key"] == runfiles.Redacted {
				c := make(map[string]any, len(km))
				for k, v := range km {
					c[k] = v
				}
				c["key"] = fmt.Sprintf("plan-stand-in-key-%d", i)
				cp[i] = c
			}
		}
		out["keys"] = cp
	}
	return out
}
