package lab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/gateway"
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

	Nodes   NodesSpec   `yaml:"nodes" json:"nodes"`
	Gateway GatewaySpec `yaml:"gateway" json:"gateway"`
	// Redis is "off" (default), "auto" (start redis-server), or a redis:// URL.
	Redis string `yaml:"redis" json:"redis"`

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
	// Routes weights predict, chat, chat-stream, agent, export, standard.
	// Default {predict: 1}.
	Routes map[string]float64 `yaml:"routes" json:"routes"`
	// RoutesByPriority replaces Routes for the priorities it names, e.g.
	// {P0: {predict: 1}}: critical traffic as short decision calls only.
	RoutesByPriority map[string]map[string]float64 `yaml:"routes_by_priority" json:"routes_by_priority"`
	// PromptTokens is the prompt size range, drawn uniformly. Default 100..400.
	PromptTokens IntRange `yaml:"prompt_tokens" json:"prompt_tokens"`
	// MaxTokens is the completion size asked for. Default 64.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
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
	MemoryLimitMB float64  `yaml:"memory_limit_mb" json:"memory_limit_mb"`
	RestartDelay  Duration `yaml:"restart_delay" json:"restart_delay"` // default 2s
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

// Defense names, in display order.
var Defenses = []string{"ratelimit", "guard", "bulkhead", "budget", "breaker", "retry", "fallback"}

// Routes the generator can send.
var Routes = []string{"predict", "chat", "chat-stream", "agent", "export", "standard"}

// Defaults applied by Normalize.
const (
	DefaultTick           = 250 * time.Millisecond
	DefaultClientTimeout  = 2 * time.Second
	DefaultMaxOutstanding = 4096
	DefaultMemoryLimitMB  = 512
	DefaultRestartDelay   = 2 * time.Second
	QuickDuration         = 20 * time.Second
)

// LoadExperiment reads and validates an experiment file.
func LoadExperiment(path string) (*Experiment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	e, err := ParseExperiment(b)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", path, err)
	}
	return e, nil
}

// ParseExperiment decodes YAML strictly (unknown fields are errors), fills
// defaults and validates. Errors name the line.
func ParseExperiment(b []byte) (*Experiment, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	e := &Experiment{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(e); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		return nil, err
	}
	e.lines = map[string]int{}
	if len(root.Content) > 0 {
		indexLines(root.Content[0], "", e.lines)
	}
	if err := e.Normalize(); err != nil {
		return nil, err
	}
	return e, nil
}

// gatewayErrPath maps a gateway config error to the experiment field that
// most likely caused it.
func gatewayErrPath(err error) string {
	var ce *gateway.ConfigError
	if errors.As(err, &ce) {
		switch {
		case strings.HasPrefix(ce.Field, "classes."), ce.Field == "token_budget":
			return "gateway.limits"
		case strings.HasPrefix(ce.Field, "guard."):
			return "gateway.guard"
		case strings.HasPrefix(ce.Field, "defenses."):
			return "gateway.defenses"
		}
	}
	return "gateway.config"
}

// indexLines records the line of every mapping key and sequence item under
// n, keyed by dotted path ("stages.2.target").
func indexLines(n *yaml.Node, prefix string, out map[string]int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(prefix, n.Content[i].Value)
			out[p] = n.Content[i].Line
			indexLines(n.Content[i+1], p, out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := join(prefix, fmt.Sprint(i))
			out[p] = c.Line
			indexLines(c, p, out)
		}
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// errAt formats a validation error for the field at path, with its line
// when the experiment came from a file (the nearest known ancestor's line).
func (e *Experiment) errAt(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	for p := path; p != ""; {
		if l, ok := e.lines[p]; ok {
			return fmt.Errorf("line %d: %s: %s", l, path, msg)
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return fmt.Errorf("%s: %s", path, msg)
}

// Normalize fills defaults and validates. It is idempotent.
func (e *Experiment) Normalize() error {
	var errs []error
	bad := func(path, format string, args ...any) { errs = append(errs, e.errAt(path, format, args...)) }

	if e.Name == "" {
		bad("name", "required")
	} else if strings.ContainsAny(e.Name, "/\\ \t\n") {
		bad("name", "%q: no spaces or slashes (it names the run folder)", e.Name)
	}
	if e.Title == "" {
		e.Title = e.Name
	}
	for i, a := range e.Articles {
		if len(a) != 3 || a < "000" || a > "004" {
			bad(fmt.Sprintf("articles.%d", i), "%q: want a seed article number, 000..004", a)
		}
	}
	if e.Tick == 0 {
		e.Tick = Duration(DefaultTick)
	}
	if e.Tick == Forever || e.Tick.D() > DefaultTick || e.Tick.D() < 10*time.Millisecond {
		bad("tick", "%s: want 10ms..250ms (at least 4 samples a second)", e.Tick)
	}
	if e.StartRate < 0 || math.IsNaN(e.StartRate) {
		bad("start_rate", "%v: want ≥ 0", e.StartRate)
	}
	var sum time.Duration
	for i, s := range e.Stages {
		if s.Duration == Forever {
			bad(fmt.Sprintf("stages.%d.duration", i), "forever is only for the experiment's duration")
		}
		if s.Target < 0 || math.IsNaN(s.Target) || s.Target > 1e6 {
			bad(fmt.Sprintf("stages.%d.target", i), "%v: want 0..1000000 req/s", s.Target)
		}
		sum += s.Duration.D()
	}
	switch {
	case e.Duration == 0 && len(e.Stages) == 0:
		bad("duration", "an experiment needs stages or a duration")
	case e.Duration == 0:
		e.Duration = Duration(sum)
		if sum == 0 {
			bad("stages", "the stages last 0s: give them durations or set duration")
		}
	}
	switch e.Arrival {
	case "":
		e.Arrival = "constant"
	case "constant", "poisson":
	default:
		bad("arrival", "%q: want constant or poisson", e.Arrival)
	}
	e.normalizeMix(bad)
	if e.ClientTimeout == 0 {
		e.ClientTimeout = Duration(DefaultClientTimeout)
	}
	if e.ClientTimeout == Forever || e.ClientTimeout.D() < 10*time.Millisecond {
		bad("client_timeout", "%s: want at least 10ms", e.ClientTimeout)
	}
	if e.MaxOutstanding == 0 {
		e.MaxOutstanding = DefaultMaxOutstanding
	}
	if e.MaxOutstanding < 1 || e.MaxOutstanding > 1<<20 {
		bad("max_outstanding", "%d: want 1..1048576", e.MaxOutstanding)
	}
	if e.Nodes.Count == 0 {
		e.Nodes.Count = 3
	}
	if e.Nodes.Count < 1 || e.Nodes.Count > 32 {
		bad("nodes.count", "%d: want 1..32", e.Nodes.Count)
	}
	if e.Gateway.Count == 0 {
		e.Gateway.Count = 1
	}
	if e.Gateway.Count < 1 || e.Gateway.Count > 16 {
		bad("gateway.count", "%d: want 1..16", e.Gateway.Count)
	}
	for name := range e.Gateway.Defenses {
		if !contains(Defenses, name) {
			bad("gateway.defenses."+name, "unknown defense (known: %s)", strings.Join(Defenses, ", "))
		}
	}
	if e.Gateway.MemoryLimitMB == 0 {
		e.Gateway.MemoryLimitMB = DefaultMemoryLimitMB
	}
	if math.IsNaN(e.Gateway.MemoryLimitMB) || (e.Gateway.MemoryLimitMB > 0 && e.Gateway.MemoryLimitMB < 16) {
		bad("gateway.memory_limit_mb", "%v: want ≥ 16, or negative for no limit", e.Gateway.MemoryLimitMB)
	}
	if e.Gateway.RestartDelay == 0 {
		e.Gateway.RestartDelay = Duration(DefaultRestartDelay)
	}
	if e.Gateway.RestartDelay == Forever {
		bad("gateway.restart_delay", "forever is only for the experiment's duration")
	}
	switch {
	case e.Redis == "":
		e.Redis = "off"
	case e.Redis == "off", e.Redis == "auto":
	case strings.HasPrefix(e.Redis, "redis://"), strings.HasPrefix(e.Redis, "rediss://"), strings.HasPrefix(e.Redis, "unix://"):
	default:
		bad("redis", "%q: want auto, off or a redis:// URL", e.Redis)
	}
	for i, f := range e.Faults {
		p := fmt.Sprintf("faults.%d", i)
		if f.Fault == "" {
			bad(p+".fault", "required")
		} else if err := validateFaultName(f.Fault); err != nil {
			bad(p+".fault", "%v", err)
		} else if err := validateFaultStep(f); err != nil {
			bad(p+".params", "%v", err)
		}
		if f.At == Forever || f.For == Forever {
			bad(p, "forever is only for the experiment's duration")
		}
		if e.Duration != Forever && f.At.D() > e.Duration.D() {
			bad(p+".at", "%s is after the end of the run (%s)", f.At, e.Duration)
		}
	}
	for i, s := range e.Narration {
		p := fmt.Sprintf("narration.%d", i)
		switch s.Kind {
		case "predict", "watch", "explain":
		default:
			bad(p+".kind", "%q: want predict, watch or explain", s.Kind)
		}
		if strings.TrimSpace(s.Text) == "" {
			bad(p+".text", "required")
		}
		if s.At == Forever {
			bad(p+".at", "forever is only for the experiment's duration")
		}
		if i > 0 && s.At < e.Narration[i-1].At {
			bad(p+".at", "%s is before the previous step (%s): keep steps in order", s.At, e.Narration[i-1].At)
		}
	}
	for _, name := range sortedKeys(e.Thresholds) {
		if _, err := ParseThreshold(name, e.Thresholds[name]); err != nil {
			bad("thresholds."+name, "%v", err)
		}
	}
	if err := validateNodeKnobs(e.Nodes.Knobs); err != nil {
		bad("nodes.knobs", "%v", err)
	}
	if len(errs) == 0 {
		// The gateway config this experiment makes must parse.
		_, _, err := gatewayConfig(e, gatewayParams{
			listen: "127.0.0.1:0", admin: "127.0.0.1:0", token: "check",
			nodes: []string{"127.0.0.1:1"}, keys: apiKeys("check"),
			defenses: e.Gateway.Defenses, gateways: e.Gateway.Count,
		})
		if err != nil {
			bad(gatewayErrPath(err), "%v", err)
		}
	}
	return errors.Join(errs...)
}

func (e *Experiment) normalizeMix(bad func(path, format string, args ...any)) {
	m := &e.Mix
	if len(m.Priorities) == 0 {
		m.Priorities = map[string]float64{"P0": 0.1, "P1": 0.3, "P2": 0.6}
	}
	total := 0.0
	for _, k := range sortedKeys(m.Priorities) {
		v := m.Priorities[k]
		if !contains(Priorities, k) {
			bad("mix.priorities."+k, "unknown priority (want P0, P1, P2)")
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			bad("mix.priorities."+k, "%v: want a weight ≥ 0", v)
		}
		total += v
	}
	if total <= 0 {
		bad("mix.priorities", "weights sum to 0")
	}
	if len(m.Routes) == 0 {
		m.Routes = map[string]float64{"predict": 1}
	}
	checkRoutes := func(path string, routes map[string]float64) {
		total := 0.0
		for _, k := range sortedKeys(routes) {
			v := routes[k]
			if !contains(Routes, k) {
				bad(path+"."+k, "unknown route (known: %s)", strings.Join(Routes, ", "))
			}
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				bad(path+"."+k, "%v: want a weight ≥ 0", v)
			}
			total += v
		}
		if total <= 0 {
			bad(path, "weights sum to 0")
		}
	}
	checkRoutes("mix.routes", m.Routes)
	for _, p := range sortedKeys(m.RoutesByPriority) {
		if !contains(Priorities, p) {
			bad("mix.routes_by_priority."+p, "unknown priority (want P0, P1, P2)")
			continue
		}
		checkRoutes("mix.routes_by_priority."+p, m.RoutesByPriority[p])
	}
	if m.PromptTokens == (IntRange{}) {
		m.PromptTokens = IntRange{Min: 100, Max: 400}
	}
	if m.PromptTokens.Min < 1 || m.PromptTokens.Max < m.PromptTokens.Min || m.PromptTokens.Max > 1_000_000 {
		bad("mix.prompt_tokens", "%d..%d: want 1 ≤ min ≤ max ≤ 1000000", m.PromptTokens.Min, m.PromptTokens.Max)
	}
	if m.MaxTokens == 0 {
		m.MaxTokens = 64
	}
	if m.MaxTokens < 1 || m.MaxTokens > 1_000_000 {
		bad("mix.max_tokens", "%d: want 1..1000000", m.MaxTokens)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

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

// Clone returns a deep copy (maps and slices are copied).
func (e *Experiment) Clone() *Experiment {
	c := *e
	c.Articles = append([]string(nil), e.Articles...)
	c.Narration = append([]Step(nil), e.Narration...)
	c.Stages = append([]Stage(nil), e.Stages...)
	c.Faults = make([]FaultStep, len(e.Faults))
	for i, f := range e.Faults {
		f.Params = cloneMap(f.Params)
		c.Faults[i] = f
	}
	c.Mix.Priorities = cloneFloats(e.Mix.Priorities)
	c.Mix.Routes = cloneFloats(e.Mix.Routes)
	c.Mix.RoutesByPriority = cloneRouteTables(e.Mix.RoutesByPriority)
	c.Nodes.Knobs = cloneMap(e.Nodes.Knobs)
	c.Gateway.Limits = cloneMap(e.Gateway.Limits)
	c.Gateway.Guard = cloneMap(e.Gateway.Guard)
	c.Gateway.Config = cloneMap(e.Gateway.Config)
	if e.Gateway.Defenses != nil {
		c.Gateway.Defenses = make(map[string]bool, len(e.Gateway.Defenses))
		for k, v := range e.Gateway.Defenses {
			c.Gateway.Defenses[k] = v
		}
	}
	if e.Thresholds != nil {
		c.Thresholds = make(map[string]string, len(e.Thresholds))
		for k, v := range e.Thresholds {
			c.Thresholds[k] = v
		}
	}
	return &c
}

func cloneFloats(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	c := make(map[string]float64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// cloneMap deep-copies maps and slices of a decoded YAML/JSON value.
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneValue(v)
	}
	return c
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return cloneMap(t)
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = cloneValue(x)
		}
		return c
	}
	return v
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
	for i := range c.Faults {
		c.Faults[i].At = scale(c.Faults[i].At)
		c.Faults[i].For = scale(c.Faults[i].For)
		scaleForParam(c.Faults[i].Params, f)
	}
	for i := range c.Narration {
		c.Narration[i].At = scale(c.Narration[i].At)
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

// DefaultExperiment is the live lab the dashboard starts with: three nodes
// of 16 slots at p50 200 ms (capacity ≈ 200 req/s), one gateway with every
// defense on and an adaptive limit, and a moderate overload (2×) that runs
// until stopped.
func DefaultExperiment() *Experiment {
	e := &Experiment{
		Name:        "lab",
		Title:       "Levee lab",
		Description: "Three model nodes behind one gateway with every defense on, offered twice their capacity. Toggle faults and defenses and watch.",
		Duration:    Forever,
		StartRate:   50,
		Stages:      []Stage{{Duration: Duration(10 * time.Second), Target: 400}},
		Arrival:     "poisson",
		Mix: MixSpec{
			Priorities: map[string]float64{"P0": 0.1, "P1": 0.3, "P2": 0.6},
			Routes:     map[string]float64{"predict": 0.8, "chat": 0.1, "chat-stream": 0.1},
			// P0 is the trade/settle decision (seed 003): short calls that a
			// retry can save when a node dies, unlike a half-sent stream.
			RoutesByPriority: map[string]map[string]float64{"P0": {"predict": 1}},
			PromptTokens:     IntRange{Min: 100, Max: 400},
			MaxTokens:        64,
		},
		ClientTimeout: Duration(2 * time.Second),
		Nodes:         NodesSpec{Count: 3, Knobs: defaultNodeKnobs()},
		Gateway: GatewaySpec{
			Count:    1,
			Defenses: map[string]bool{"ratelimit": false, "guard": true, "bulkhead": true, "budget": true, "breaker": true, "retry": true, "fallback": true},
			Limits: map[string]any{"classes": map[string]any{"ai": map[string]any{
				"algorithm": "gradient", "limit": 48, "min": 8, "max": 128, "queue_size": 64, "queue_timeout_ms": 500,
			}}},
		},
		Narration: []Step{
			{At: 0, Kind: "watch", Text: "Offered load ramps to twice the nodes' capacity. Watch goodput hold at capacity while P2 is shed first."},
		},
	}
	if err := e.Normalize(); err != nil {
		panic("lab: default experiment is invalid: " + err.Error())
	}
	return e
}

// defaultNodeKnobs: 16 slots, lognormal p50 200 ms / p99 600 ms, an
// unbounded FIFO queue beyond the slots (an overloaded server), and work
// continued for clients that left (wasted, as real inference servers do).
func defaultNodeKnobs() map[string]any {
	return map[string]any{
		"slots":               16,
		"overflow":            "queue",
		"latency":             map[string]any{"dist": "lognormal", "p50_ms": 200, "p99_ms": 600},
		"abort_on_disconnect": false,
	}
}

// runFolderName is "<UTC time>-<name>".
func runFolderName(t time.Time, name string) string {
	return t.UTC().Format("20060102-150405") + "-" + name
}

// resolveRunDir returns the run folder: out when given, else
// runs/<time>-<name> under runsDir (default "runs"), made unique.
func resolveRunDir(out, runsDir, name string, now time.Time) (string, error) {
	if out != "" {
		return out, nil
	}
	if runsDir == "" {
		runsDir = "runs"
	}
	base := filepath.Join(runsDir, runFolderName(now, name))
	dir := base
	for i := 2; ; i++ {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return dir, nil
		}
		dir = fmt.Sprintf("%s-%d", base, i)
		if i > 1000 {
			return "", fmt.Errorf("run folder: too many runs named %s", base)
		}
	}
}

// sortedFaultSteps returns the fault steps ordered by time (stable).
func sortedFaultSteps(fs []FaultStep) []FaultStep {
	out := append([]FaultStep(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

func cloneRouteTables(m map[string]map[string]float64) map[string]map[string]float64 {
	if m == nil {
		return nil
	}
	c := make(map[string]map[string]float64, len(m))
	for k, v := range m {
		c[k] = cloneFloats(v)
	}
	return c
}
