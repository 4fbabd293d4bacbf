package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/levee-lab/levee/lab/experiment"
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
	// Each flag fills its input only when given, marked as from a flag, so
	// that it overrides the run's figure and nothing else does.
	var given plan.Inputs
	knownFlag(fs, "slots", "`N` slots per model node: calls one node serves at once (seed 000's C_max for one node)", &given.SlotsPerNode, strconv.Atoi)
	knownFlag(fs, "nodes", "`N` model nodes (C = nodes × slots; default 1)", &given.Nodes, strconv.Atoi)
	knownFlag(fs, "mean", "mean service time T of one call (`duration`, e.g. 1.2s)", &given.Mean, time.ParseDuration)
	knownFlag(fs, "p50", "median service time (`duration`; with --p99 and no --mean, T is the lognormal's mean)", &given.P50, time.ParseDuration)
	knownFlag(fs, "p99", "99th percentile service time (`duration`; seed 002's P99)", &given.P99, time.ParseDuration)
	knownFlag(fs, "gateways", "`N` gateway instances sharing the load (seed 002's N; default 1)", &given.Gateways, strconv.Atoi)
	knownFlag(fs, "target", "load to plan for, in `req/s` (for a run: its peak offered load)", &given.Target, parseFloat)
	knownFlag(fs, "subtasks", "`K` model calls per agent request (seed 004; default: the gateway's fan-out, 4)", &given.SubTasks, strconv.Atoi)
	knownFlag(fs, "prompt-tokens", "mean prompt size in `tokens` (default 250)", &given.PromptTokens, parseFloat)
	knownFlag(fs, "max-tokens", "answer `tokens` asked per call (default 64)", &given.MaxTokens, strconv.Atoi)
	knownFlag(fs, "budget", "latency budget: the longest a caller waits (`duration`; default: the clients' timeout, 2s)", &given.Budget, time.ParseDuration)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "levee plan: want at most one run folder")
		fs.Usage()
		return 2
	}
	var parts plan.Parts
	if fs.NArg() == 1 {
		lessons, err := lesson.Embedded()
		if err != nil {
			fmt.Fprintf(stderr, "levee plan: %v\n", err)
			return 1
		}
		parts, err = plan.ReadRun(fs.Arg(0), func(name string) *experiment.Experiment {
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

// knownFlag defines a flag that sets *dst, marked as given on the command
// line, when (and only when) it is used.
func knownFlag[T any](fs *flag.FlagSet, name, usage string, dst *plan.Known[T], parse func(string) (T, error)) {
	fs.Func(name, usage, func(s string) error {
		v, err := parse(s)
		if err != nil {
			return err
		}
		*dst = plan.Of(v, plan.FromFlag)
		return nil
	})
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
