package experiment

import (
	"math"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
)

// Experiment is one scenario: traffic, topology, faults, narration and
// pass/fail thresholds. It is read from YAML with unknown fields rejected
// (LoadExperiment); errors name the line. Zero values mean "the default"
// only where a field says so.
type Experiment struct {
	Name        string `yaml:"name" json:"name"`   // short id, used in run folder names; required
	Title       string `yaml:"title" json:"title"` // one line for people
	Description string `yaml:"description" json:"description,omitempty"`
	// Articles names the seed articles (seeds/NNN, "000".."004") the lesson
	// teaches, main one first. Not the RNG seed: that is Seed.
	Articles []string `yaml:"articles" json:"articles,omitempty"`

	// Narration steps show at their time (predict → watch → explain).
	Narration []Step `yaml:"narration" json:"narration,omitempty"`

	// Duration of the run. Omitted: the sum of the stages. "forever": until
	// stopped (the last stage's target holds).
	Duration Duration `yaml:"duration" json:"duration"`
	// Tick is the sampling period; default 250ms, at most 250ms (≥ 4 Hz).
	Tick Duration `yaml:"tick" json:"tick"`
	Seed int64    `yaml:"seed" json:"seed"`

	// StartRate is the arrival rate at t=0 (req/s); each stage then ramps
	// linearly from the previous target to its own over its duration (k6).
	StartRate float64 `yaml:"start_rate" json:"start_rate"`
	Stages    []Stage `yaml:"stages" json:"stages"`
	// Arrival is "constant" (default) or "poisson".
	Arrival        string   `yaml:"arrival" json:"arrival"`
	Mix            MixSpec  `yaml:"mix" json:"mix"`
	ClientTimeout  Duration `yaml:"client_timeout" json:"client_timeout"`   // default 2s
	MaxOutstanding int      `yaml:"max_outstanding" json:"max_outstanding"` // default 4096
	// ClientRetry is the clients' retry policy; omitted: no retries.
	ClientRetry ClientRetrySpec `yaml:"client_retry" json:"client_retry,omitzero"`

	Nodes   NodesSpec   `yaml:"nodes" json:"nodes"`
	Gateway GatewaySpec `yaml:"gateway" json:"gateway"`
	// Redis is where the gateways share rate limits: off (default), auto,
	// server, embedded, cluster, or an external URL (RedisSpec).
	Redis RedisSpec `yaml:"redis" json:"redis"`

	Faults []FaultStep `yaml:"faults" json:"faults,omitempty"`
	// Thresholds maps a metric (see ThresholdMetrics) to "OP NUMBER".
	Thresholds map[string]string `yaml:"thresholds" json:"thresholds,omitempty"`

	// lines maps a dotted field path to its line in the source, for errors
	// found after decoding. Nil for experiments built in code.
	lines map[string]int
}

// Step is one narration step.
type Step struct {
	At   Duration `yaml:"at" json:"at"`
	Kind string   `yaml:"kind" json:"kind"` // predict, watch or explain
	Text string   `yaml:"text" json:"text"`
	// Predict, on a predict step, names the number the room is asked for
	// (see Predict); nil: the step asks in words only.
	Predict *Predict `yaml:"predict" json:"predict,omitempty"`
}

// Stage ramps the target rate linearly to Target over Duration.
type Stage struct {
	Duration Duration `yaml:"duration" json:"duration"`
	Target   float64  `yaml:"target" json:"target"`
}

// MixSpec is the traffic mix. Shares need not sum to 1; they are weights.
type MixSpec struct {
	// Priorities weights P0, P1, P2 (each sent with its own API key).
	// Default {P0: 0.1, P1: 0.3, P2: 0.6}.
	Priorities map[string]float64 `yaml:"priorities" json:"priorities"`
	// Routes weights the load generator's routes (Routes): predict, chat,
	// chat-stream, agent, export, standard, completions,
	// completions-stream, embeddings.
	// Default {predict: 1}.
	Routes map[string]float64 `yaml:"routes" json:"routes"`
	// RoutesByPriority replaces Routes for the priorities it names, e.g.
	// {P0: {predict: 1}}: critical traffic as short decision calls only.
	RoutesByPriority map[string]map[string]float64 `yaml:"routes_by_priority" json:"routes_by_priority"`
	// PromptTokens is the prompt size range, drawn uniformly. Default 100..400.
	PromptTokens IntRange `yaml:"prompt_tokens" json:"prompt_tokens"`
	// MaxTokens is the completion size asked for. Default 64.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
	// AgentSteps is the tool-call steps an agent task asks for, drawn
	// uniformly; omitted: none asked (the gateway runs one step).
	AgentSteps IntRange `yaml:"agent_steps" json:"agent_steps,omitempty"`
}

// IntRange is an inclusive range.
type IntRange struct {
	Min int `yaml:"min" json:"min"`
	Max int `yaml:"max" json:"max"`
}

// NodesSpec is the fake model tier: Count processes, one node each.
type NodesSpec struct {
	Count int `yaml:"count" json:"count"` // default 3
	// Knobs are fake model knobs (docs/CONTRACTS.md), applied to every node
	// at start and after every restart.
	Knobs map[string]any `yaml:"knobs" json:"knobs,omitempty"`
	// MaxTokens is the nodes' bound of max_tokens (levee fakemodel
	// --max-tokens), 1..16,777,216; 0 (absent) keeps the fake model's
	// 32768. The generated gateway config's max_tokens_limit follows it
	// (gateway.config may still set its own).
	MaxTokens int `yaml:"max_tokens" json:"max_tokens,omitempty"`
}

// GatewaySpec is the gateway tier.
type GatewaySpec struct {
	Count int `yaml:"count" json:"count"` // default 1
	// Defenses switches each defense (ratelimit, guard, bulkhead, budget,
	// breaker, retry, fallback); omitted ones keep the gateway's default.
	Defenses map[string]bool `yaml:"defenses" json:"defenses,omitempty"`
	// Limits is a PUT /admin/limits body (docs/CONTRACTS.md), applied at
	// start and after every restart.
	Limits map[string]any `yaml:"limits" json:"limits,omitempty"`
	// Guard holds overload guard thresholds, merged into the gateway
	// config's guard section.
	Guard map[string]any `yaml:"guard" json:"guard,omitempty"`
	// MemoryLimitMB is the pod memory limit: at this RSS the gateway is
	// SIGKILLed (an OOM kill) and restarted after RestartDelay. Default 512;
	// 0 in YAML means the default, a negative value means no limit.
	MemoryLimitMB float64 `yaml:"memory_limit_mb" json:"memory_limit_mb"`
	// RestartDelay is the wait before a gateway's restart (default 2s); a
	// restart that fails is tried again after twice the previous wait, up
	// to a minute.
	RestartDelay Duration `yaml:"restart_delay" json:"restart_delay"`
	// Config is merged last into the generated gateway config (raw keys).
	Config map[string]any `yaml:"config" json:"config,omitempty"`
}

// FaultStep applies a chaos fault at At; with For > 0 it is reverted after
// For (for node_kill: the node restarts).
type FaultStep struct {
	At     Duration       `yaml:"at" json:"at"`
	Fault  string         `yaml:"fault" json:"fault"`
	Params map[string]any `yaml:"params" json:"params,omitempty"`
	For    Duration       `yaml:"for" json:"for"`
}

// Defenses are the defense names, in display order.
var Defenses = func() []string { d := wire.DefenseNames(); return d[:] }()

// KnownDefense reports whether name is a defense.
func KnownDefense(name string) bool { return contains(Defenses, name) }

// Routes are the routes a mix may weight: the load generator's.
var Routes = func() []string { r := wire.LoadRoutes(); return r[:] }()

// priorities are the priority names a mix may weight.
func priorities() []string { return load.Priorities }

// DefaultRoute is the route of a mix that names none.
const DefaultRoute = wire.RoutePredict

// DefaultPriorityMix is the priority mix of an experiment that names none.
func DefaultPriorityMix() map[string]float64 {
	return map[string]float64{wire.PriorityP0: 0.1, wire.PriorityP1: 0.3, wire.PriorityP2: 0.6}
}

// Narration step kinds: predict → watch → explain (the lesson's words, not
// a wire contract).
const (
	NarrationPredict = "predict"
	NarrationWatch   = "watch"
	NarrationExplain = "explain"
)

// Defaults applied by Normalize.
const (
	DefaultTick           = 250 * time.Millisecond
	DefaultClientTimeout  = 2 * time.Second
	DefaultMaxOutstanding = 4096
	DefaultMemoryLimitMB  = 512
	DefaultRestartDelay   = 2 * time.Second
	DefaultNodes          = 3
	QuickDuration         = 20 * time.Second
)

// ParsedThresholds returns the thresholds in name order. The experiment
// must be normalized.
func (e *Experiment) ParsedThresholds() []Threshold {
	out := make([]Threshold, 0, len(e.Thresholds))
	for _, name := range sortedKeys(e.Thresholds) {
		t, err := ParseThreshold(name, e.Thresholds[name])
		if err == nil {
			out = append(out, t)
		}
	}
	return out
}

// Quick returns a copy time-scaled so that the whole run lasts about
// QuickDuration: stages, fault times and durations, and narration times are
// multiplied by the same factor. Experiments already that short, and
// experiments that run forever, are returned unscaled.
func (e *Experiment) Quick() *Experiment {
	c := e.Clone()
	if e.Duration == Forever || e.Duration.D() <= QuickDuration {
		return c
	}
	f := float64(QuickDuration) / float64(e.Duration.D())
	scale := func(d Duration) Duration { return Duration(math.Round(float64(d) * f)) }
	c.Duration = Duration(QuickDuration)
	for i := range c.Stages {
		c.Stages[i].Duration = scale(c.Stages[i].Duration)
	}
	c.Faults = scaleFaults(c.Faults, f)
	for i := range c.Narration {
		c.Narration[i].At = scale(c.Narration[i].At)
		if p := c.Narration[i].Predict; p != nil {
			p.From, p.To = scale(p.From), scale(p.To)
		}
	}
	return c
}

// TargetAt is the scheduled arrival rate at elapsed time t: a linear ramp
// within each stage (k6's ramping-arrival-rate); after the last stage the
// last target holds.
func (e *Experiment) TargetAt(t time.Duration) float64 {
	prev := e.StartRate
	var start time.Duration
	for _, s := range e.Stages {
		d := s.Duration.D()
		if t < start+d {
			frac := float64(t-start) / float64(d)
			return prev + (s.Target-prev)*frac
		}
		start += d
		prev = s.Target
	}
	return prev
}

// StageAt is the index of the stage running at t (len(Stages) once they
// are over).
func (e *Experiment) StageAt(t time.Duration) int {
	var start time.Duration
	for i, s := range e.Stages {
		start += s.Duration.D()
		if t < start {
			return i
		}
	}
	return len(e.Stages)
}
