package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/lesson"
	"github.com/levee-lab/levee/lab/plan"
)

func init() {
	register(command{
		name:    "plan",
		summary: "the seed articles' sizing (QPS_safe = C/T, limit = QPS×P99/N, queue, tokens, agents) for a run folder or given figures",
		run:     runPlan,
	})
}

func runPlan(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("plan", "plan [RUN_DIR] [--slots N --mean 1.2s …]\n\n"+
		"With RUN_DIR: sizes the run's own setup and compares it with what the run did\n"+
		"(flags then change one figure: \"what if\"). Without: sizes the figures given.\n"+
		"Example (seed 000): levee plan --slots 50 --mean 1.2s --p99 1.5s", stderr)
	slots := fs.Int("slots", 0, "`slots` per model node: calls one node serves at once (seed 000's C_max for one node)")
	nodes := fs.Int("nodes", 0, "model `nodes` (C = nodes × slots; default 1)")
	mean := fs.Duration("mean", 0, "mean service time T of one call (e.g. 1.2s)")
	p50 := fs.Duration("p50", 0, "median service time (with --p99 and no --mean, T is the lognormal's mean)")
	p99 := fs.Duration("p99", 0, "99th percentile service time (seed 002's P99)")
	gateways := fs.Int("gateways", 0, "gateway instances sharing the load (seed 002's N; default 1)")
	target := fs.Float64("target", 0, "load to plan for, in req/s (for a run: its peak offered load)")
	subtasks := fs.Int("subtasks", 0, "model calls per agent request (seed 004's K; default: the gateway's fan-out, 4)")
	prompt := fs.Float64("prompt-tokens", 0, "mean prompt size in `tokens` (default 250)")
	maxTokens := fs.Int("max-tokens", 0, "answer `tokens` asked per call (default 64)")
	budget := fs.Duration("budget", 0, "latency budget: the longest a caller waits (default: the clients' timeout, 2s)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "levee plan: want at most one run folder")
		fs.Usage()
		return 2
	}
	given := plan.Inputs{}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "slots":
			given.SlotsPerNode = plan.Of(*slots, plan.FromFlag)
		case "nodes":
			given.Nodes = plan.Of(*nodes, plan.FromFlag)
		case "mean":
			given.Mean = plan.Of(*mean, plan.FromFlag)
		case "p50":
			given.P50 = plan.Of(*p50, plan.FromFlag)
		case "p99":
			given.P99 = plan.Of(*p99, plan.FromFlag)
		case "gateways":
			given.Gateways = plan.Of(*gateways, plan.FromFlag)
		case "target":
			given.Target = plan.Of(*target, plan.FromFlag)
		case "subtasks":
			given.SubTasks = plan.Of(*subtasks, plan.FromFlag)
		case "prompt-tokens":
			given.PromptTokens = plan.Of(*prompt, plan.FromFlag)
		case "max-tokens":
			given.MaxTokens = plan.Of(*maxTokens, plan.FromFlag)
		case "budget":
			given.Budget = plan.Of(*budget, plan.FromFlag)
		}
	})
	var parts plan.Parts
	if fs.NArg() == 1 {
		lessons, err := lesson.Embedded()
		if err != nil {
			fmt.Fprintf(stderr, "levee plan: %v\n", err)
			return 1
		}
		parts, err = plan.ReadRun(fs.Arg(0), func(name string) *lab.Experiment {
			if l, ok := lesson.ByName(lessons, name); ok {
				return l.Experiment
			}
			return nil
		})
		if err != nil {
			fmt.Fprintf(stderr, "levee plan: %v\n", err)
			return 2
		}
	} else {
		parts.Inputs = plan.Defaults()
	}
	parts.Inputs.Override(given)
	p, err := plan.New(parts)
	if err != nil {
		fmt.Fprintf(stderr, "levee plan: %v\n", err)
		if plan.IsUsage(err) {
			fmt.Fprintln(stderr, "Run 'levee plan --help' for the flags.")
			return 2
		}
		return 1
	}
	if err := p.Write(stdout); err != nil {
		fmt.Fprintf(stderr, "levee plan: %v\n", err)
		return 1
	}
	return 0
}
