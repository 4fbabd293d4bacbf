// Package plan does the seed articles' sizing arithmetic on a recorded run
// or on figures given by hand, and sets it beside what the run measured:
// QPS_safe = C / T (seed 000), slots for a target load (seed 001), the
// per-instance concurrency limit QPS × P99 / N (seed 002), the queue for a
// latency budget, the token budget and the agent amplification (seed 004).
package plan

import (
	"errors"
	"fmt"
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

// Validate reports every input that is out of range or contradicts another,
// as one *UsageError naming each.
func (in Inputs) Validate() error {
	var bad []string
	pos := func(name string, k Known[int]) {
		if k.Set() && k.V < 1 {
			bad = append(bad, fmt.Sprintf("%s %d: want ≥ 1", name, k.V))
		}
	}
	dur := func(name string, k Known[time.Duration]) {
		if k.Set() && k.V <= 0 {
			bad = append(bad, fmt.Sprintf("%s %s: want > 0", name, k.V))
		}
	}
	pos("nodes", in.Nodes)
	pos("slots", in.SlotsPerNode)
	pos("gateways", in.Gateways)
	pos("subtasks", in.SubTasks)
	dur("mean", in.Mean)
	dur("p50", in.P50)
	dur("p99", in.P99)
	dur("budget", in.Budget)
	if in.P50.Set() && in.P99.Set() && in.P99.V < in.P50.V {
		bad = append(bad, fmt.Sprintf("p99 %s is below p50 %s: the slowest 1 %% cannot be faster than the median", in.P99.V, in.P50.V))
	}
	if in.Target.Set() && !(in.Target.V > 0) {
		bad = append(bad, fmt.Sprintf("target %g req/s: want > 0", in.Target.V))
	}
	if in.PromptTokens.Set() && !(in.PromptTokens.V >= 0) {
		bad = append(bad, fmt.Sprintf("prompt tokens %g: want ≥ 0", in.PromptTokens.V))
	}
	if in.MaxTokens.Set() && in.MaxTokens.V < 0 {
		bad = append(bad, fmt.Sprintf("max tokens %d: want ≥ 0", in.MaxTokens.V))
	}
	for _, d := range []struct {
		name string
		k    Known[int]
	}{{"yellow sub-tasks", in.YellowSubTasks}, {"red sub-tasks", in.RedSubTasks}} {
		if d.k.Set() && d.k.V < 1 {
			bad = append(bad, fmt.Sprintf("%s %d: want ≥ 1", d.name, d.k.V))
		}
	}
	if len(bad) > 0 {
		return &UsageError{Msg: strings.Join(bad, "; ")}
	}
	return nil
}

// errNothing is returned when no part of the plan can be computed.
var errNothing = &UsageError{Msg: "nothing to plan: give the model's slots and service time (--slots N --mean 1.2s, or --p50 and --p99), or a run folder"}

// IsUsage reports whether err is a usage error (exit code 2).
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}
