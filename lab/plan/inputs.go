// Package plan does the seed articles' sizing arithmetic on a recorded run
// or on figures given by hand, and sets it beside what the run measured:
// QPS_safe = C / T (seed 000), slots for a target load (seed 001), the
// per-instance concurrency limit QPS × P99 / N (seed 002), the queue for a
// latency budget, the token budget and the agent amplification (seed 004).
package plan

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Source says where a figure came from, so a reader can tell a measured
// or configured number from an assumed one.
type Source string

// Sources of inputs.
const (
	FromFlag    Source = "flag"
	FromRun     Source = "run.json"
	FromSamples Source = "samples.jsonl"
	FromLesson  Source = "lesson"
	FromGateway Source = "gateway default"
	FromDefault Source = "default"
)

// Known is an input and where it came from; From is "" when it is unknown.
type Known[T any] struct {
	V    T
	From Source
}

// Set reports whether the value is known.
func (k Known[T]) Set() bool { return k.From != "" }

// Of returns a known value.
func Of[T any](v T, from Source) Known[T] { return Known[T]{V: v, From: from} }

// Inputs are the figures the sizing needs. Any may be unknown; each part of
// the plan says which input it lacks.
type Inputs struct {
	Nodes        Known[int] // model nodes
	SlotsPerNode Known[int] // calls one node serves at once
	// Mean is T, the mean service time (seed 000's T_avg). Unknown: derived
	// from P50 and P99 (lognormal, like the fake model), else P50.
	Mean     Known[time.Duration]
	P50, P99 Known[time.Duration]
	// Dist names the service-time distribution when known ("lognormal").
	Dist     Known[string]
	Gateways Known[int] // gateway instances (seed 002's N)
	// Target is the load to plan for (req/s); unknown: QPS_safe.
	Target Known[float64]
	// SubTasks is K, model calls per agent request (seed 004); YellowSubTasks
	// and RedSubTasks the degraded depths.
	SubTasks, YellowSubTasks, RedSubTasks Known[int]
	PromptTokens                          Known[float64] // mean prompt tokens per call
	MaxTokens                             Known[int]     // answer tokens asked per call
	// Budget is the latency budget: the time a caller waits at most.
	Budget Known[time.Duration]
}

// Override replaces every input o knows (flags over a run: "what if").
func (in *Inputs) Override(o Inputs) {
	over(&in.Nodes, o.Nodes)
	over(&in.SlotsPerNode, o.SlotsPerNode)
	over(&in.Mean, o.Mean)
	over(&in.P50, o.P50)
	over(&in.P99, o.P99)
	over(&in.Dist, o.Dist)
	over(&in.Gateways, o.Gateways)
	over(&in.Target, o.Target)
	over(&in.SubTasks, o.SubTasks)
	over(&in.YellowSubTasks, o.YellowSubTasks)
	over(&in.RedSubTasks, o.RedSubTasks)
	over(&in.PromptTokens, o.PromptTokens)
	over(&in.MaxTokens, o.MaxTokens)
	over(&in.Budget, o.Budget)
	// A latency given by hand replaces the distribution it came from.
	if o.Mean.Set() || o.P50.Set() || o.P99.Set() {
		if !o.Dist.Set() {
			in.Dist = Known[string]{}
		}
		if !o.Mean.Set() && in.Mean.From != FromFlag {
			in.Mean = Known[time.Duration]{} // derive it again from the new p50/p99
		}
	}
}

func over[T any](dst *Known[T], src Known[T]) {
	if src.Set() {
		*dst = src
	}
}

// UsageError is an input that cannot be used: a value out of range or two
// inputs that contradict each other. Commands exit 2 on it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Bounds on the inputs, stated in the errors that enforce them. They are
// far beyond anything the seed articles size, and low enough that every
// figure the plan derives from them stays exact in a float64 and fits an
// int: a plan never prints a wrapped-around or non-finite number.
const (
	MaxCount    = 1_000_000     // nodes, slots per node, gateways, sub-tasks
	MaxSlots    = 1_000_000_000 // C = nodes × slots
	MaxTarget   = 1e9           // target load, req/s
	MaxTokens   = 1e9           // prompt or answer tokens per call
	MaxDuration = 24 * time.Hour
	// MaxFigure bounds every count the plan derives: the slots for the
	// target, the limit, the queue size, the token budget (below 2^53).
	MaxFigure = 1e15
)

// Validate reports every input that is out of range (not finite, below its
// minimum or above its Max* bound) or contradicts another, as one
// *UsageError naming each by its flag ("--slots") when it came from one,
// else by its name and source ("slots (run.json)"). When every input is in
// range it also rejects inputs whose derived figures (C = nodes × slots, T,
// and the counts the plan prints) would pass MaxSlots, MaxDuration or
// MaxFigure. A nil error means Compute's arithmetic cannot overflow.
func (in Inputs) Validate() error {
	var bad []string
	addf := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	count := func(name string, k Known[int]) {
		switch {
		case !k.Set():
		case k.V < 1:
			addf("%s %d: want ≥ 1", label(name, k.From), k.V)
		case k.V > MaxCount:
			addf("%s %d: want ≤ %s", label(name, k.From), k.V, group(MaxCount))
		}
	}
	dur := func(name string, k Known[time.Duration]) {
		switch {
		case !k.Set():
		case k.V <= 0:
			addf("%s %s: want > 0", label(name, k.From), k.V)
		case k.V > MaxDuration:
			addf("%s %s: want ≤ %s", label(name, k.From), k.V, MaxDuration)
		}
	}
	count("nodes", in.Nodes)
	count("slots", in.SlotsPerNode)
	count("gateways", in.Gateways)
	count("subtasks", in.SubTasks)
	count("yellow sub-tasks", in.YellowSubTasks)
	count("red sub-tasks", in.RedSubTasks)
	dur("mean", in.Mean)
	dur("p50", in.P50)
	dur("p99", in.P99)
	dur("budget", in.Budget)
	if in.P50.Set() && in.P99.Set() && in.P99.V < in.P50.V {
		addf("p99 %s is below p50 %s: the slowest 1 %% cannot be faster than the median", in.P99.V, in.P50.V)
	}
	if k := in.Target; k.Set() {
		switch {
		case math.IsNaN(k.V) || math.IsInf(k.V, 0):
			addf("%s %g req/s: want a finite load", label("target", k.From), k.V)
		case k.V <= 0:
			addf("%s %g req/s: want > 0", label("target", k.From), k.V)
		case k.V > MaxTarget:
			addf("%s %g req/s: want ≤ %s req/s", label("target", k.From), k.V, group(MaxTarget))
		}
	}
	if k := in.PromptTokens; k.Set() {
		switch {
		case math.IsNaN(k.V) || math.IsInf(k.V, 0):
			addf("%s %g: want a finite number of tokens", label("prompt-tokens", k.From), k.V)
		case k.V < 0:
			addf("%s %g: want ≥ 0", label("prompt-tokens", k.From), k.V)
		case k.V > MaxTokens:
			addf("%s %g: want ≤ %s", label("prompt-tokens", k.From), k.V, group(MaxTokens))
		}
	}
	if k := in.MaxTokens; k.Set() {
		switch {
		case k.V < 0:
			addf("%s %d: want ≥ 0", label("max-tokens", k.From), k.V)
		case k.V > MaxTokens:
			addf("%s %d: want ≤ %s", label("max-tokens", k.From), k.V, group(MaxTokens))
		}
	}
	if len(bad) == 0 {
		bad = in.derivedOutOfRange()
	}
	if len(bad) > 0 {
		return &UsageError{Msg: strings.Join(bad, "; ")}
	}
	return nil
}

// derivedOutOfRange checks, in float64 so that nothing wraps, the figures
// Compute derives from inputs that are each in range: C, T, and every
// count the plan prints. It mirrors Compute's formulas.
func (in Inputs) derivedOutOfRange() []string {
	var bad []string
	n := float64(gateways(in))
	c := 0.0 // C; 0 when the slots are unknown
	if in.SlotsPerNode.Set() {
		nodes := 1
		if in.Nodes.Set() {
			nodes = in.Nodes.V
		}
		c = float64(nodes) * float64(in.SlotsPerNode.V)
		if c > MaxSlots {
			bad = append(bad, fmt.Sprintf("model slots C = nodes × slots = %d × %d = %s: want ≤ %s (lower --nodes or --slots)",
				nodes, in.SlotsPerNode.V, group(c), group(MaxSlots)))
		}
	}
	t := 0.0 // T in seconds; 0 when unknown
	switch {
	case in.Mean.Set():
		t = in.Mean.V.Seconds()
	case in.P50.Set() && in.P99.Set():
		t = lognormalMeanNanos(in.P50.V, in.P99.V) / float64(time.Second)
		if !(t <= MaxDuration.Seconds()) {
			bad = append(bad, fmt.Sprintf("p50 %s and p99 %s: the lognormal they describe has a mean of %s s: want ≤ %s (give --mean, or a p99 nearer the p50)",
				in.P50.V, in.P99.V, group(t), MaxDuration))
			t = 0
		}
	case in.P50.Set():
		t = in.P50.V.Seconds()
	}
	figure := func(what string, v float64, flags string) {
		if !(v <= MaxFigure) {
			bad = append(bad, fmt.Sprintf("%s would be %s: want ≤ %s (lower %s)", what, group(v), group(MaxFigure), flags))
		}
	}
	safe := 0.0 // QPS_safe
	if c > 0 && t > 0 {
		safe = c / t
	}
	if in.Target.Set() && t > 0 {
		figure("the slots for the target, target × T,", in.Target.V*t, "--target or the service time")
	}
	if in.P99.Set() {
		p99 := in.P99.V.Seconds()
		figure("the concurrency limit, QPS × P99 / N,", max(safe, in.Target.V)*p99/n, "--slots, --nodes or --target, or raise --mean")
	}
	if in.Budget.Set() && safe > 0 {
		figure("the queue size, QPS_safe × budget / N,", safe*in.Budget.V.Seconds()/n, "--budget or --slots, or raise --mean")
	}
	if c > 0 && (in.PromptTokens.Set() || in.MaxTokens.Set()) {
		figure("the token budget, C × tokens per call / N,", c*(in.PromptTokens.V+float64(in.MaxTokens.V))/n, "--prompt-tokens, --max-tokens or --slots")
	}
	return bad
}

// label names an input in an error: its flag when it came from one, else
// its name and where it came from. A name with a space has no flag.
func label(flag string, from Source) string {
	switch {
	case strings.Contains(flag, " ") && from == FromFlag:
		return flag
	case from == FromFlag:
		return "--" + flag
	}
	return fmt.Sprintf("%s (%s)", strings.ReplaceAll(flag, "-", " "), from)
}

// group is a whole number with thousands separators, for bounds in errors.
func group(v float64) string { return num(v, 0) }

// errNothing is returned when no part of the plan can be computed.
var errNothing = &UsageError{Msg: "nothing to plan: give the model's slots and service time (--slots N --mean 1.2s, or --p50 and --p99), or a run folder"}

// IsUsage reports whether err is a usage error (exit code 2).
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}
