package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
)

func init() {
	register(command{
		name:    "loadtest",
		summary: "open-loop load against a URL (or a loopback server): target vs sent rate",
		run:     runLoadtest,
	})
}

func runLoadtest(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("loadtest", "loadtest [--rate N] [--duration D] [--url URL] [flags]\n\n"+
		"Offers open-loop load for --duration (Ctrl-C ends it early) and prints the\n"+
		"target rate, the rate sent (offered minus generator_dropped), the outcomes,\n"+
		"the HTTP status codes, why requests got no answer, and the latency\n"+
		"(--json: as one JSON object).\n"+
		"Exit status: 0 some requests succeeded and none was dropped; 1 no request\n"+
		"succeeded, the generator dropped requests (--max-outstanding reached) or a\n"+
		"request has no outcome; 2 bad usage.", stderr)
	rate := fs.Float64("rate", 2000, "target arrival rate, requests per second")
	duration := fs.Duration("duration", 5*time.Second, "how long to offer load")
	url := fs.String("url", "", "base URL of a gateway; empty starts a trivial loopback server in-process")
	route := fs.String("route", wire.RouteStandard, "route to send: "+strings.Join(loadRoutes(), ", "))
	arrival := fs.String("arrival", load.ArrivalConstant, "arrival process: constant or poisson")
	timeout := fs.Duration("timeout", 2*time.Second, "client timeout per request")
	maxOut := fs.Int("max-outstanding", 10000, "cap on requests in flight; arrivals beyond it are generator_dropped")
	key := fs.String("key", "", "API key sent as Authorization: Bearer KEY (empty: none)")
	seed := fs.Int64("seed", 1, "seed of the arrival schedule and the mix")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object on stdout (the loopback server's address goes to stderr)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "levee loadtest: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := checkLoadtestFlags(*rate, *duration, *timeout, *maxOut, *arrival, *route, *url, *key); err != nil {
		fmt.Fprintf(stderr, "levee loadtest: %v\n", err)
		return 2
	}

	// Every flag is checked before anything starts: without --url the
	// generator is built on a placeholder target, replaced by the loopback
	// server's address once it listens.
	target := *url
	if target == "" {
		target = "http://127.0.0.1"
	}
	g, err := load.New(loadtestConfig(target, *key, *route, *arrival, *timeout, *maxOut, *seed))
	if err != nil {
		fmt.Fprintf(stderr, "levee loadtest: %v\n", err)
		return 2
	}
	if err := g.SetRate(*rate); err != nil {
		fmt.Fprintf(stderr, "levee loadtest: --rate: %v\n", err)
		return 2
	}

	var served func() uint64
	if *url == "" {
		addr, count, stop, err := startLoopbackServer()
		if err != nil {
			fmt.Fprintf(stderr, "levee loadtest: %v\n", err)
			return 1
		}
		defer stop()
		if err := g.SetTargets([]string{"http://" + addr}); err != nil {
			fmt.Fprintf(stderr, "levee loadtest: loopback server: %v\n", err)
			return 1
		}
		served = count
		if *asJSON {
			fmt.Fprintf(stderr, "loopback server on %s\n", addr)
		} else {
			fmt.Fprintf(stdout, "loopback server on %s\n", addr)
		}
	}
	// Ctrl-C or SIGTERM ends the load early: the generator stops
	// scheduling, waits for the requests in flight and the summary prints as
	// after --duration. A second signal while it drains kills at once.
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	context.AfterFunc(sigCtx, stopSignals)
	ctx, cancel := context.WithTimeout(sigCtx, *duration)
	defer cancel()
	if err := g.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "levee loadtest: %v\n", err)
		return 1
	}
	t := g.Totals()
	if sigCtx.Err() != nil {
		fmt.Fprintf(stderr, "levee loadtest: interrupted after %.3f s of %v; the summary covers what was offered until then\n",
			t.Elapsed.Seconds(), *duration)
	}
	if code := writeLoadtest(stdout, stderr, *asJSON, *rate, t, sigCtx.Err() != nil, served); code != 0 {
		return code
	}
	return loadtestVerdict(stderr, t, *maxOut)
}

// loadtestConfig is the generator's config for levee loadtest: all P0,
// one route, short prompts and answers.
func loadtestConfig(target, key, route, arrival string, timeout time.Duration, maxOut int, seed int64) load.Config {
	return load.Config{
		Targets: []string{target},
		Mix: load.Mix{
			Priorities:   map[string]float64{wire.PriorityP0: 1},
			Keys:         map[string]string{wire.PriorityP0: key},
			Routes:       map[string]float64{route: 1},
			PromptTokens: [2]int{16, 64},
			MaxTokens:    32,
		},
		Arrival:        arrival,
		ClientTimeout:  timeout,
		MaxOutstanding: maxOut,
		Seed:           seed,
	}
}

// writeLoadtest prints the summary of t, as text or (asJSON) one JSON
// object, with what the loopback server received when served is set; it
// returns 1 when the JSON cannot be written, else 0.
func writeLoadtest(stdout, stderr io.Writer, asJSON bool, rate float64, t load.Totals, interrupted bool, served func() uint64) int {
	switch {
	case asJSON:
		sum := loadtestJSON(rate, t, interrupted)
		if served != nil {
			n := served()
			sum.ServerReceived = &n
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			fmt.Fprintf(stderr, "levee loadtest: --json: %v\n", err)
			return 1
		}
	default:
		printLoadtest(stdout, rate, t)
		if served != nil {
			fmt.Fprintf(stdout, "server received %d\n", served())
		}
	}
	return 0
}

// checkLoadtestFlags returns an error naming the first flag whose value
// cannot be offered: a --rate that is not above 0 (a load test that sends
// nothing; k6's arrival-rate executors refuse it too) or above
// load.MaxRate, a --duration,
// --timeout or --max-outstanding not above 0, an --arrival or --route the
// generator does not know, a --key no Authorization header can carry, a
// --url that is not an http(s) base URL (load.CheckTarget: also a port
// out of range, a query or a fragment). The
// generator checks its config and rate again; this only
// makes the message name the flag the user typed.
func checkLoadtestFlags(rate float64, duration, timeout time.Duration, maxOut int, arrival, route, target, key string) error {
	switch {
	case !(rate > 0): // NaN too
		return fmt.Errorf("--rate %v: want > 0 requests per second", rate)
	case rate > load.MaxRate: // +Inf too
		return fmt.Errorf("--rate %v: want at most %g requests per second", rate, load.MaxRate)
	case duration <= 0:
		return fmt.Errorf("--duration %v: want > 0", duration)
	case timeout <= 0:
		return fmt.Errorf("--timeout %v: want > 0", timeout)
	case maxOut <= 0:
		return fmt.Errorf("--max-outstanding %d: want > 0", maxOut)
	case arrival != load.ArrivalConstant && arrival != load.ArrivalPoisson:
		return fmt.Errorf("--arrival %q: want %s or %s", arrival, load.ArrivalConstant, load.ArrivalPoisson)
	case !slices.Contains(loadRoutes(), route):
		return fmt.Errorf("--route %q: want one of %s", route, strings.Join(loadRoutes(), ", "))
	}
	if msg := wire.KeyProblem(key); key != "" && msg != "" {
		return fmt.Errorf("--key: the API key cannot be sent in an Authorization header: %s", msg)
	}
	if target == "" {
		return nil
	}
	if err := load.CheckTarget(target); err != nil {
		return fmt.Errorf("--url %q: %w", target, err)
	}
	return nil
}

// loadtestVerdict is the exit code of a finished load test: 1, with a
// one-line reason on stderr, when a request has no outcome, when no request
// succeeded, or when the generator dropped arrivals (the target rate was not
// offered); else 0.
func loadtestVerdict(stderr io.Writer, t load.Totals, maxOut int) int {
	if u := t.Unaccounted(); u != 0 {
		fmt.Fprintf(stderr, "levee loadtest: %d offered requests have no outcome\n", u)
		return 1
	}
	if t.Outcomes[wire.OutcomeOK.String()] == 0 {
		fmt.Fprintf(stderr, "levee loadtest: no request succeeded (ok 0 of %d offered)\n", t.Offered)
		return 1
	}
	if d := t.Outcomes[wire.OutcomeGeneratorDropped.String()]; d > 0 {
		fmt.Fprintf(stderr, "levee loadtest: the generator dropped %d of %d offered requests (%d already in flight, --max-outstanding): the target rate was not sent\n",
			d, t.Offered, maxOut)
		return 1
	}
	return 0
}

// loadtestSentRPS is the rate actually sent: the arrivals offered minus the
// ones the generator dropped, per second of load.
func loadtestSentRPS(t load.Totals) float64 {
	if t.Elapsed <= 0 {
		return 0
	}
	sent := t.Offered - min(t.Offered, t.Outcomes[wire.OutcomeGeneratorDropped.String()])
	return float64(sent) / t.Elapsed.Seconds()
}

func printLoadtest(w io.Writer, target float64, t load.Totals) {
	sent := loadtestSentRPS(t)
	errPct := 0.0
	if target > 0 {
		errPct = 100 * loadtestAbs(sent-target) / target
	}
	fmt.Fprintf(w, "target %s req/s  sent %s req/s  error %.3f %%  (offered %d, generator_dropped %d, in %.3f s)\n",
		loadtestRate(target), loadtestRate(sent), errPct, t.Offered, t.Outcomes[wire.OutcomeGeneratorDropped.String()], t.Elapsed.Seconds())
	var parts []string
	for _, o := range load.Outcomes {
		if n := t.Outcomes[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	fmt.Fprintf(w, "outcomes: %s  (unaccounted %d)\n", strings.Join(parts, ", "), t.Unaccounted())
	// What the outcomes were made of, as vegeta's and oha's status code and
	// error distributions: an error is a 5xx, a 404 or a refused connection.
	if len(t.Status) > 0 {
		parts = parts[:0]
		for _, code := range slices.Sorted(maps.Keys(t.Status)) {
			parts = append(parts, fmt.Sprintf("%d %d", code, t.Status[code]))
		}
		fmt.Fprintf(w, "HTTP status: %s\n", strings.Join(parts, ", "))
	}
	if len(t.NoAnswer) > 0 {
		causes := slices.SortedFunc(maps.Keys(t.NoAnswer), func(a, b string) int {
			return cmp.Or(-cmp.Compare(t.NoAnswer[a], t.NoAnswer[b]), cmp.Compare(a, b))
		})
		parts = parts[:0]
		for _, c := range causes {
			parts = append(parts, fmt.Sprintf("%s %d", c, t.NoAnswer[c]))
		}
		fmt.Fprintf(w, "no answer: %s\n", strings.Join(parts, ", "))
	}
	if t.Resent > 0 {
		fmt.Fprintf(w, "resent %d: the HTTP client wrote a GET again on another connection after the server closed a kept-alive one without answering; the server got %d requests (a request's outcome is its last write's)\n",
			t.Resent, t.Attempts)
	}
	// The admitted requests reached the server and were not shed (a 429
	// or a gateway's 503 is quick and would hide the queueing); the count
	// says how many the quantiles stand for.
	if h := t.Admitted; h != nil && h.TotalCount() > 0 {
		ms := func(us int64) float64 { return float64(us) / 1000 }
		fmt.Fprintf(w, "latency from intended time, %d admitted (not shed): min %.2f ms  mean %.2f ms  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  max %.2f ms\n",
			h.TotalCount(), ms(h.Min()), h.Mean()/1000, ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(90)),
			ms(h.ValueAtQuantile(99)), ms(h.ValueAtQuantile(99.9)), ms(h.Max()))
	}
}

// loadtestSummary is the --json summary: the text summary's figures,
// rates in req/s, times in seconds, latencies in milliseconds.
type loadtestSummary struct {
	TargetRPS    float64           `json:"target_rps"`
	SentRPS      float64           `json:"sent_rps"` // offered minus generator_dropped, per second
	RateErrorPct float64           `json:"rate_error_pct"`
	Offered      uint64            `json:"offered"`
	ElapsedS     float64           `json:"elapsed_s"` // of offering load (the drain after it excluded)
	Interrupted  bool              `json:"interrupted"`
	Outcomes     map[string]uint64 `json:"outcomes"` // every outcome, 0 included
	Unaccounted  int64             `json:"unaccounted"`
	Status       map[int]uint64    `json:"status"`    // answers by HTTP status
	NoAnswer     map[string]uint64 `json:"no_answer"` // sent requests without an answer, by cause
	Attempts     uint64            `json:"attempts"`  // requests the server got: offered − dropped + resent
	Resent       uint64            `json:"resent"`
	// Latency is from the intended send time, of the admitted requests
	// (not shed); null when none was.
	Latency *loadtestLatency `json:"latency_ms"`
	// ServerReceived: the loopback server's count (without --url only).
	ServerReceived *uint64 `json:"server_received,omitempty"`
}

type loadtestLatency struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99.9"`
	Max   float64 `json:"max"`
}

func loadtestJSON(target float64, t load.Totals, interrupted bool) loadtestSummary {
	sent := loadtestSentRPS(t)
	s := loadtestSummary{
		TargetRPS: target, SentRPS: sent, Offered: t.Offered, ElapsedS: t.Elapsed.Seconds(),
		Interrupted: interrupted, Outcomes: t.Outcomes, Unaccounted: t.Unaccounted(),
		Status: t.Status, NoAnswer: t.NoAnswer, Attempts: t.Attempts, Resent: t.Resent,
	}
	if target > 0 {
		s.RateErrorPct = 100 * loadtestAbs(sent-target) / target
	}
	if s.Status == nil {
		s.Status = map[int]uint64{}
	}
	if s.NoAnswer == nil {
		s.NoAnswer = map[string]uint64{}
	}
	if h := t.Admitted; h != nil && h.TotalCount() > 0 {
		ms := func(us int64) float64 { return float64(us) / 1000 }
		s.Latency = &loadtestLatency{
			Count: h.TotalCount(), Min: ms(h.Min()), Mean: h.Mean() / 1000,
			P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)),
			P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max()),
		}
	}
	return s
}

// loadtestRate formats a rate in req/s: one decimal from 10 up (1999.8),
// three significant digits below (0.05, 0.333, 2.5), so a low --rate does not
// print as 0.1 or 0.0.
func loadtestRate(r float64) string {
	if r == 0 || loadtestAbs(r) >= 10 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.3g", r)
}

func loadtestAbs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// startLoopbackServer serves every load route trivially on 127.0.0.1 and
// counts the requests.
func startLoopbackServer() (addr string, served func() uint64, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, fmt.Errorf("loopback server: %w", err)
	}
	var count loadtestCounter
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			count.add()
			_, _ = io.Copy(io.Discard, r.Body)
			switch {
			case r.URL.Path == wire.PathExport:
				w.Header().Set("Content-Type", "application/x-ndjson")
				for i := range 10 {
					fmt.Fprintf(w, "{\"row\":%d}\n", i)
				}
			case r.Header.Get("Accept") == "text/event-stream":
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
			default:
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"ok":true}`)
			}
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("loopback server: %v\n", err)
		}
	}()
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	return ln.Addr().String(), count.get, stop, nil
}

// loadtestCounter is a tiny atomic counter.
type loadtestCounter struct{ n atomic.Uint64 }

func (c *loadtestCounter) add()        { c.n.Add(1) }
func (c *loadtestCounter) get() uint64 { return c.n.Load() }

// loadRoutes is wire.LoadRoutes as a slice.
func loadRoutes() []string {
	r := wire.LoadRoutes()
	return r[:]
}
