package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

func init() {
	register(command{
		name:    "fakemodel",
		summary: "run fake, slow OpenAI-compatible model nodes (latency, slots, queues, errors, GC pressure)",
		run:     runFakemodel,
	})
}

// fakemodelKnobFlags maps a command-line flag to its knob in the JSON patch
// (dotted for latency fields). Only flags given on the command line apply,
// after --config and --knobs, so they always win. Each usage names its
// value in backquotes (the flag package's convention), so --help shows
// "-slots n", not the type the value is kept in.
var fakemodelKnobFlags = []struct {
	flag, knob, usage string
	kind              byte // 'f' float, 'i' int, 's' string, 'b' bool
}{
	{"latency", lat(wire.KnobDist), "latency `distribution`: lognormal, fixed or uniform", 's'},
	{"p50-ms", lat(wire.KnobP50Ms), "lognormal median service time, in `ms`", 'f'},
	{"p99-ms", lat(wire.KnobP99Ms), "lognormal 99th percentile service time, in `ms`", 'f'},
	{"fixed-ms", lat(wire.KnobFixedMs), "fixed service time, in `ms`", 'f'},
	{"min-ms", lat(wire.KnobMinMs), "uniform lower bound, in `ms`", 'f'},
	{"max-ms", lat(wire.KnobMaxMs), "uniform upper bound, in `ms`", 'f'},
	{"latency-multiplier", wire.KnobLatencyMultiplier, "`factor` multiplying sampled latency, TTFT and the time between streamed tokens", 'f'},
	{"latency-add-ms", wire.KnobLatencyAddMs, "`ms` added to sampled latency and TTFT", 'f'},
	{"ttft-ms", wire.KnobTTFTMs, "stream time to first token, in `ms`", 'f'},
	{"tokens-per-s", wire.KnobTokensPerS, "stream token `rate`, in tokens/s", 'f'},
	{"ms-per-1k-tokens", wire.KnobMsPer1kTokens, "extra service time per 1000 prompt+completion tokens, in `ms`", 'f'},
	{"slots", wire.KnobSlots, "`n` requests served at once per node", 'i'},
	{"overflow", wire.KnobOverflow, "beyond the slots, the `mode`: queue (unbounded FIFO), bounded (FIFO of --queue-size, then 429) or reject (429)", 's'},
	{"queue-size", wire.KnobQueueSize, "wait queue bound of --overflow bounded, `n` requests", 'i'},
	{"slowdown", wire.KnobSlowdown, "service time × (1 + `factor` × busy/slots)", 'f'},
	{"error-rate", wire.KnobErrorRate, "`share` of the requests not hung answered 500 (drawn independently of --hang-rate: errors are error-rate × (1 − hang-rate) of all)", 'f'},
	{"hang-rate", wire.KnobHangRate, "`share` of requests never answered (drawn first; any pair of rates in [0, 1] is valid)", 'f'},
	{"abort-on-disconnect", wire.KnobAbortOnDisconnect, "stop work when the client leaves", 'b'},
	{"answer-tokens", wire.KnobAnswerTokens, "natural answer length in `tokens` (0: every answer runs to max_tokens, finish_reason length)", 'i'},
	{"backpressure-queue", wire.KnobBackpressureQueue, "send the backpressure header while this many requests wait for a slot (`n`, 0: off)", 'i'},
	{"backpressure-heap-mb", wire.KnobBackpressureHeapMB, "send the backpressure header while the live heap is at least this (`MB`, 0: off)", 'f'},
	{"backpressure-cpu", wire.KnobBackpressureCPU, "send the backpressure header while the process uses at least this `share` of its CPUs (0: off)", 'f'},
	{"backpressure-force", wire.KnobBackpressureForce, "send the backpressure header on every answer", 'b'},
	{"churn-mb-per-s", wire.KnobChurnMBPerS, "in-node allocation churn, in `MB/s`", 'f'},
	{"ballast-mb", wire.KnobBallastMB, "in-node retained ballast, in `MB`", 'f'},
	{"cpu-hog-goroutines", wire.KnobCPUHogGoroutines, "`n` in-node CPU hog goroutines", 'i'},
	{"cpu-hog-duty", wire.KnobCPUHogDuty, "`share` of time each hog spins (≤ 0.95)", 'f'},
}

// knobValue is the flag.Value of a number or string knob flag. It parses
// its kind when the flag is given, so a bad number is a usage error at
// once, and it holds nothing until then: a knob flag not given stays unset
// (fs.Visit skips it) and does not override --config or --knobs, while one
// given as 0 does.
type knobValue struct {
	kind byte // 'f' float, 'i' int, 's' string
	text string
	v    any // the parsed value once set
}

func (k *knobValue) String() string {
	if k == nil {
		return ""
	}
	return k.text
}

// Set parses s as the knob's kind.
func (k *knobValue) Set(s string) error {
	var v any
	switch k.kind {
	case 'f':
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("want a finite number")
		}
		v = f
	case 'i':
		n, err := strconv.Atoi(s)
		if err != nil {
			return errors.New("want a whole number")
		}
		v = n
	default:
		v = s
	}
	k.text, k.v = s, v
	return nil
}

// maxFakemodelNodes bounds --nodes: each node is a listener of its own.
const maxFakemodelNodes = 1024

// fakemodelAddr checks --listen, --port and --nodes before anything starts
// and returns the host and the first node's port (0: every node picks a
// free one). Its errors are usage errors.
func fakemodelAddr(listen string, port, nodes int) (host string, first int, err error) {
	if nodes < 1 || nodes > maxFakemodelNodes {
		return "", 0, fmt.Errorf("--nodes %d: want 1 to %d", nodes, maxFakemodelNodes)
	}
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("--listen %q: %w", listen, err)
	}
	first, err = strconv.Atoi(portStr)
	if err != nil || first < 0 || first > 65535 {
		return "", 0, fmt.Errorf("--listen %q: want a port from 0 to 65535", listen)
	}
	if port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("--port %d: want 0 to 65535", port)
	}
	if port != 0 {
		first = port
	}
	if first != 0 && first+nodes-1 > 65535 {
		return "", 0, fmt.Errorf("port %d with --nodes %d: the last node's port %d is above 65535", first, nodes, first+nodes-1)
	}
	return host, first, nil
}

func runFakemodel(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("fakemodel", "fakemodel [--nodes N] [--listen ADDR | --port P] [--config knobs.yaml] [knob flags]", stderr)
	nodes := fs.Int("nodes", 1, "number of nodes in this process (consecutive ports with --port)")
	listen := fs.String("listen", "127.0.0.1:0", "address of the first node (port 0: every node picks a free port)")
	port := fs.Int("port", 0, "port of the first node; nodes take consecutive ports (overrides the port of --listen)")
	token := fs.String("admin-token", "", "bearer token of the admin API (default $LEVEE_ADMIN_TOKEN, else random, printed on stderr)")
	adminAny := fs.Bool("admin-any", false, "accept admin requests from non-loopback peers (token still required)")
	config := fs.String("config", "", "YAML knob file (knobs it does not name keep their defaults)")
	knobsJSON := fs.String("knobs", "", "JSON knob patch applied after --config, e.g. '{\"slots\":8}'")
	drain := fs.Duration("drain", 10*time.Second, "on SIGTERM, how long in-flight and queued requests may take to finish")
	printKnobs := fs.Bool("print-knobs", false, "print the resulting knobs as JSON and exit")
	maxTokens := fs.Int("max-tokens", fakemodel.MaxCompletionTokens, fmt.Sprintf("largest max_tokens (and max_completion_tokens) a request may ask, in `tokens`, 1 to %d: a larger one is a 400 naming the field; match the gateway's max_tokens_limit", openai.MaxTokensCeiling))
	for _, kf := range fakemodelKnobFlags {
		if kf.kind == 'b' {
			fs.Bool(kf.flag, false, kf.usage)
			continue
		}
		fs.Var(&knobValue{kind: kf.kind}, kf.flag, kf.usage)
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "levee fakemodel: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	// Every flag is checked before anything starts or is printed.
	host, p, err := fakemodelAddr(*listen, *port, *nodes)
	if err == nil && *drain < 0 {
		err = fmt.Errorf("--drain %s: want ≥ 0", *drain)
	}
	if err == nil && fakemodel.CheckMaxTokensBound(*maxTokens) != nil {
		err = fmt.Errorf("--max-tokens %d: want 1 to %d", *maxTokens, openai.MaxTokensCeiling)
	}
	if err != nil {
		fmt.Fprintf(stderr, "levee fakemodel: %v\n", err)
		fmt.Fprintln(stderr, "Run 'levee fakemodel --help' for the flags.")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	knobs, err := fakemodelKnobs(fs, *config, *knobsJSON)
	if err != nil {
		fmt.Fprintf(stderr, "levee fakemodel: %v\n", err)
		return 2
	}
	if *printKnobs {
		b, _ := json.MarshalIndent(knobs, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return 0
	}

	tok, err := adminToken(stderr, *token)
	if err != nil {
		fmt.Fprintf(stderr, "levee fakemodel: %v\n", err)
		return 1
	}

	lns, err := fakemodel.Listen(host, p, *nodes)
	if err != nil {
		fmt.Fprintf(stderr, "levee fakemodel: %v\n", err)
		return 1
	}
	srv, err := fakemodel.NewServer(lns,
		fakemodel.WithKnobs(knobs), fakemodel.WithAdminToken(tok),
		fakemodel.WithAdminAny(*adminAny), fakemodel.WithLogger(log), fakemodel.WithMaxTokens(*maxTokens))
	if err != nil {
		fmt.Fprintf(stderr, "levee fakemodel: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		// A second signal while draining kills at once (the default
		// action, back once the first one was taken), as the gateway's.
		stop()
		if cause := context.Cause(ctx); cause != context.Canceled { // a signal, not the return's stop
			log.Info("fakemodel draining (a second signal stops it at once)", "cause", cause, "timeout", *drain)
		}
	}()
	fmt.Fprintf(stdout, "%s\n", srv.ReadyLine())
	log.Info("fakemodel ready", "nodes", *nodes, "first", srv.Nodes()[0].Addr(),
		"mean_service", knobs.MeanService(), "slots", knobs.Slots, "overflow", knobs.Overflow)
	if err := srv.Run(ctx, *drain); err != nil {
		if ctx.Err() != nil {
			// Signalled: the drain deadline passed and the rest was closed.
			// The stop was asked for, so it is still a clean exit.
			log.Warn("fakemodel drain incomplete", "err", err)
			return 0
		}
		log.Error("fakemodel stopped", "err", err)
		return 1
	}
	log.Info("fakemodel drained and stopped")
	return 0
}

// fakemodelKnobs builds the starting knobs: defaults, then the YAML file,
// then the --knobs patch, then each knob flag given.
func fakemodelKnobs(fs *flag.FlagSet, config, patch string) (fakemodel.Knobs, error) {
	k := fakemodel.DefaultKnobs()
	if config != "" {
		f, err := os.Open(config)
		if err != nil {
			return k, fmt.Errorf("--config: %w", err)
		}
		defer f.Close()
		if k, err = fakemodel.LoadKnobsYAML(f, k); err != nil {
			return k, fmt.Errorf("--config %s: %w", config, err)
		}
	}
	if patch != "" {
		var err error
		if k, err = k.Patch([]byte(patch)); err != nil {
			return k, fmt.Errorf("--knobs: %w", err)
		}
	}
	top := map[string]any{}
	latency := map[string]any{}
	var bad error
	fs.Visit(func(f *flag.Flag) {
		for _, kf := range fakemodelKnobFlags {
			if kf.flag != f.Name || bad != nil {
				continue
			}
			var v any
			if kv, ok := f.Value.(*knobValue); ok {
				v = kv.v // parsed by Set
			} else {
				b, err := strconv.ParseBool(f.Value.String())
				if err != nil {
					bad = fmt.Errorf("--%s %q: %w", kf.flag, f.Value.String(), err)
					return
				}
				v = b
			}
			if name, ok := strings.CutPrefix(kf.knob, lat("")); ok {
				latency[name] = v
			} else {
				top[kf.knob] = v
			}
		}
	})
	if bad != nil {
		return k, bad
	}
	if len(latency) > 0 {
		top[wire.KnobLatency] = latency
	}
	if len(top) > 0 {
		b, _ := json.Marshal(top)
		var err error
		if k, err = k.Patch(b); err != nil {
			return k, knobFlagError(fs, err)
		}
	}
	return k, nil
}

// knobFlagError names the flag, as typed, of the knob a knob-flag patch
// refused ("--queue-size -1: must be in [0, 1000000], got -1"); a refusal of
// a knob no flag given sets (a bound another flag moved) keeps the knob's
// name after "knob flags".
func knobFlagError(fs *flag.FlagSet, err error) error {
	var ke *fakemodel.KnobError
	if errors.As(err, &ke) {
		for _, kf := range fakemodelKnobFlags {
			if kf.knob != ke.Field {
				continue
			}
			if f := fs.Lookup(kf.flag); f != nil && isFlagSet(fs, kf.flag) {
				return &knobFlagErr{flag: kf.flag, value: f.Value.String(), err: ke}
			}
		}
	}
	return fmt.Errorf("knob flags: %w", err)
}

// knobFlagErr is a knob's refusal told by the flag that set it; it
// unwraps to the *fakemodel.KnobError.
type knobFlagErr struct {
	flag, value string
	err         *fakemodel.KnobError
}

func (e *knobFlagErr) Error() string { return "--" + e.flag + " " + e.value + ": " + e.err.Msg }
func (e *knobFlagErr) Unwrap() error { return e.err }

// isFlagSet reports whether the flag was given on the command line.
func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// lat is the dotted wire name of a latency knob ("latency.p50_ms").
func lat(knob string) string { return wire.KnobLatency + "." + knob }
