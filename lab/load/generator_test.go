package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/internal/wire"
)

// writeOK writes a well-formed answer for the route of r.
func writeOK(w http.ResponseWriter, r *http.Request, body map[string]any) {
	switch {
	case r.URL.Path == "/v1/export":
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range 20 {
			fmt.Fprintf(w, "{\"row\":%d}\n", i)
		}
	case body["stream"] == true:
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"t%d\"}}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"message":{"content":"hi"}}]}`)
	}
}

// behaviourServer answers requests in turn with each of its behaviours and
// counts what it did, so the client's outcome counts can be checked exactly.
type behaviourServer struct {
	*httptest.Server
	kinds    []string
	next     atomic.Int64
	mu       sync.Mutex
	did      map[string]int // behaviour → times done
	byKey    map[string]int // Authorization header → requests
	problems []string       // malformed requests seen
}

func newBehaviourServer(t *testing.T, timeoutMs string, kinds ...string) *behaviourServer {
	s := &behaviourServer{kinds: kinds, did: map[string]int{}, byKey: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		problem := s.check(r, timeoutMs, &body)
		kind := s.kinds[int(s.next.Add(1)-1)%len(s.kinds)]
		s.mu.Lock()
		s.did[kind]++
		s.byKey[r.Header.Get("Authorization")]++
		if problem != "" {
			s.problems = append(s.problems, problem)
		}
		s.mu.Unlock()
		switch kind {
		case "ok":
			writeOK(w, r, body)
		case "fallback":
			w.Header().Set(wire.HeaderOutcome, wire.OutcomeFallback.String())
			w.Header().Set(wire.HeaderFallback, "true")
			writeOK(w, r, body)
		case "trailer_fallback": // the stream's final word overrides its header
			w.Header().Set("Trailer", wire.HeaderOutcomeFinal)
			w.Header().Set(wire.HeaderOutcome, wire.OutcomeOK.String())
			writeOK(w, r, body)
			w.Header().Set(wire.HeaderOutcomeFinal, wire.OutcomeFallback.String())
		case "ratelimit":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case "queue_full":
			w.Header().Set(wire.HeaderOutcome, wire.OutcomeShedQueueFull.String())
			w.WriteHeader(http.StatusServiceUnavailable)
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
		case "truncated":
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "short")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case "hang":
			<-r.Context().Done()
		default:
			panic("unknown behaviour " + kind)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// check reports what is wrong with the request, "" when nothing.
func (s *behaviourServer) check(r *http.Request, timeoutMs string, body *map[string]any) string {
	if got := r.Header.Get(wire.HeaderDeadlineMs); got != timeoutMs {
		return fmt.Sprintf("%s %s: deadline header %q, want %q", r.Method, r.URL, got, timeoutMs)
	}
	switch r.URL.Path {
	case "/v1/predict", "/v1/chat/completions", "/v1/agent":
		if r.Method != http.MethodPost {
			return r.URL.Path + " with " + r.Method
		}
		if err := json.NewDecoder(r.Body).Decode(body); err != nil {
			return fmt.Sprintf("%s: body is not JSON: %v", r.URL.Path, err)
		}
		if r.URL.Path == "/v1/predict" {
			if _, ok := (*body)["features"].(map[string]any); !ok {
				return "predict without features"
			}
			return ""
		}
		if r.URL.Path == "/v1/agent" {
			p, _ := (*body)["prompt"].(string)
			if n := len(p) / 4; n < 8 || n > 12 || (*body)["max_tokens"] != float64(16) {
				return fmt.Sprintf("agent body %v", *body)
			}
			return ""
		}
		if (*body)["model"] != "fake" || (*body)["max_tokens"] != float64(16) {
			return fmt.Sprintf("%s: body %v", r.URL.Path, *body)
		}
		msgs, _ := (*body)["messages"].([]any)
		if len(msgs) != 1 {
			return "want one message"
		}
		content, _ := msgs[0].(map[string]any)["content"].(string)
		if n := len(content) / 4; n < 8 || n > 12 {
			return fmt.Sprintf("prompt of %d tokens, want 8..12", n)
		}
	case "/v1/export":
		if n, err := strconv.Atoi(r.URL.Query().Get("rows")); err != nil || n < 8 || n > 12 {
			return fmt.Sprintf("export rows %q, want the prompt draw 8..12", r.URL.Query().Get("rows"))
		}
	case "/v1/standard/ping":
	default:
		return "unexpected path " + r.URL.Path
	}
	return ""
}

func allRoutesConfig(url string) Config {
	return Config{
		Targets: []string{url},
		Mix: Mix{
			Priorities: map[string]float64{"P0": 1, "P1": 1, "P2": 1},
			Keys:       map[string]string{"P0": "key0", "P1": "key1", "P2": ""},
			Routes: map[string]float64{
				"predict": 1, "chat": 1, "chat-stream": 1, "agent": 1, "export": 1, "standard": 1,
			},
			PromptTokens: [2]int{8, 12},
			MaxTokens:    16,
		},
		Arrival:        ArrivalPoisson,
		ClientTimeout:  1500 * time.Millisecond,
		MaxOutstanding: 30,
		Seed:           1,
	}
}

// runFor runs g at rate for d of its clock, then cancels and waits for Run
// to return. With a fake clock (fc not nil) the schedule is stepped in
// ticks of 10 ms, each once the scheduler waits for its next arrival, so the
// arrivals are exactly those the seeded schedule intends within d; with the
// real clock (fc nil) it runs for d of wall time.
func runFor(t *testing.T, g *Generator, fc *clockwork.FakeClock, rate float64, d time.Duration) {
	t.Helper()
	if err := g.SetRate(rate); err != nil {
		t.Fatal(err)
	}
	var ctx context.Context
	var cancel context.CancelFunc
	if fc == nil {
		ctx, cancel = context.WithTimeout(context.Background(), d)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	defer cancel()
	stop := startRun(t, g, ctx)
	if fc != nil {
		advance(t, fc, d)
		cancel()
	}
	stop()
}

// startRun runs g until ctx ends; the returned stop waits for Run to return
// (call it once ctx has ended or will end).
// startStandardRun runs a generator of standard requests to url at rate
// constant arrivals on a fake clock (clientTimeout 0: the default); cancel
// stops its scheduling, stop waits for Run to return.
func startStandardRun(t *testing.T, url string, rate float64, clientTimeout time.Duration) (g *Generator, fc *clockwork.FakeClock, cancel context.CancelFunc, stop func()) {
	t.Helper()
	cfg := allRoutesConfig(url)
	cfg.Mix.Routes = map[string]float64{"standard": 1}
	cfg.Arrival = ArrivalConstant
	cfg.MaxOutstanding = 1000 // the gated tests hold 31 in flight: none dropped
	if clientTimeout > 0 {
		cfg.ClientTimeout = clientTimeout
	}
	fc = clockwork.NewFakeClock()
	g, err := New(cfg, WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetRate(rate); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return g, fc, cancel, startRun(t, g, ctx)
}

func startRun(t *testing.T, g *Generator, ctx context.Context) (stop func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	return func() {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
}

// advance moves fc forward by d in steps of 10 ms, each once the scheduler
// waits on its timer (it has sent every arrival due so far), and returns
// once it waits again. The rate must be above 0, or the scheduler waits on
// no timer.
func advance(t *testing.T, fc *clockwork.FakeClock, d time.Duration) {
	t.Helper()
	const step = 10 * time.Millisecond
	for left := d; ; left -= step {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := fc.BlockUntilContext(ctx, 1)
		cancel()
		if err != nil {
			t.Fatal("the scheduler never waited for its next arrival")
		}
		if left <= 0 {
			return
		}
		fc.Advance(min(step, left))
	}
}

// waitOffered waits until g has offered n requests in all.
func waitOffered(t *testing.T, g *Generator, n uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for g.Totals().Offered < n {
		if time.Now().After(deadline) {
			t.Fatalf("offered %d, waited for %d", g.Totals().Offered, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitWoken waits until the scheduler has taken the wake-up of the last
// SetRate: from then on it runs at the new rate.
func waitWoken(t *testing.T, g *Generator) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(g.wake) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the scheduler never took the rate change")
		}
		time.Sleep(time.Millisecond)
	}
}

// Every offered request ends in exactly one outcome, and each outcome is
// the one the server's behaviour implies — including requests still in
// flight when the context is cancelled (hangs that then time out) and
// arrivals dropped because the outstanding cap was full.
func TestExactAccounting(t *testing.T) {
	srv := newBehaviourServer(t, "1500", "ok", "fallback", "ratelimit", "queue_full", "500", "truncated", "hang", "trailer_fallback")
	cfg := allRoutesConfig(srv.URL)
	cfg.MaxOutstanding = 15
	g, err := New(cfg) // the real clock: timeouts must take their real time
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, g, nil, 200, time.Second)
	tot := g.Totals()

	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, p := range srv.problems {
		t.Errorf("server saw a malformed request: %s", p)
	}
	if tot.Unaccounted() != 0 {
		t.Errorf("offered %d, outcomes %v: %d unaccounted", tot.Offered, tot.Outcomes, tot.Unaccounted())
	}
	if tot.Outstanding != 0 {
		t.Errorf("%d outstanding after Run returned", tot.Outstanding)
	}
	want := map[string]uint64{
		wire.OutcomeOK.String():               uint64(srv.did["ok"]),
		wire.OutcomeFallback.String():         uint64(srv.did["fallback"] + srv.did["trailer_fallback"]),
		wire.OutcomeShedRateLimit.String():    uint64(srv.did["ratelimit"]),
		wire.OutcomeShedQueueFull.String():    uint64(srv.did["queue_full"]),
		wire.OutcomeError.String():            uint64(srv.did["500"] + srv.did["truncated"]),
		wire.OutcomeTimeout.String():          uint64(srv.did["hang"]),
		wire.OutcomeShedOverload.String():     0,
		wire.OutcomeShedQueueTimeout.String(): 0,
		wire.OutcomeShedBudget.String():       0,
	}
	for name, n := range want {
		if tot.Outcomes[name] != n {
			t.Errorf("wire.Outcome %s: client %d, server behaviour %d", name, tot.Outcomes[name], n)
		}
	}
	// The same requests by HTTP status, and those with none by cause;
	// with the dropped ones they add up to the offered.
	wantStatus := map[int]uint64{
		http.StatusOK:                  uint64(srv.did["ok"] + srv.did["fallback"] + srv.did["trailer_fallback"] + srv.did["truncated"]),
		http.StatusTooManyRequests:     uint64(srv.did["ratelimit"]),
		http.StatusServiceUnavailable:  uint64(srv.did["queue_full"]),
		http.StatusInternalServerError: uint64(srv.did["500"]),
	}
	for code, n := range wantStatus {
		if tot.Status[code] != n {
			t.Errorf("status %d: client %d, server behaviour %d (all: %v)", code, tot.Status[code], n, tot.Status)
		}
	}
	if got, want := tot.NoAnswer["client timeout"], uint64(srv.did["hang"]); got != want || len(tot.NoAnswer) != 1 {
		t.Errorf("no answer: %v, want client timeout %d only", tot.NoAnswer, want)
	}
	sum := tot.Outcomes[wire.OutcomeGeneratorDropped.String()]
	for _, n := range tot.Status {
		sum += n
	}
	for _, n := range tot.NoAnswer {
		sum += n
	}
	if sum != tot.Offered {
		t.Errorf("status %v + no answer %v + dropped = %d, offered %d", tot.Status, tot.NoAnswer, sum, tot.Offered)
	}
	received := uint64(srv.next.Load())
	if dropped := tot.Outcomes[wire.OutcomeGeneratorDropped.String()]; tot.Offered-dropped != received {
		t.Errorf("offered %d − dropped %d ≠ %d received by the server", tot.Offered, dropped, received)
	}
	if tot.Outcomes[wire.OutcomeGeneratorDropped.String()] == 0 {
		t.Error("no generator_dropped: the cap of 15 should overflow with hanging requests")
	}
	if srv.did["hang"] == 0 || srv.did["ok"] == 0 {
		t.Fatalf("too few requests to mean anything: %v", srv.did)
	}
	// Per priority: offered and outcomes add up, and the keys reached the server.
	var sumOffered uint64
	for i, p := range Priorities {
		pt := tot.ByPriority[p]
		sumOffered += pt.Offered
		var s uint64
		for _, n := range pt.Outcomes {
			s += n
		}
		if s != pt.Offered {
			t.Errorf("%s: offered %d, outcomes sum %d", p, pt.Offered, s)
		}
		key := []string{"Bearer key0", "Bearer key1", ""}[i]
		if sent := pt.Offered - pt.Outcomes[wire.OutcomeGeneratorDropped.String()]; uint64(srv.byKey[key]) != sent {
			t.Errorf("%s: server got %d requests with %q, client sent %d", p, srv.byKey[key], key, sent)
		}
		if pt.Latency.TotalCount() != int64(pt.Offered-pt.Outcomes[wire.OutcomeGeneratorDropped.String()]) {
			t.Errorf("%s: %d latencies for %d sent", p, pt.Latency.TotalCount(), pt.Offered-pt.Outcomes[wire.OutcomeGeneratorDropped.String()])
		}
	}
	if sumOffered != tot.Offered {
		t.Errorf("priorities offered %d, total %d", sumOffered, tot.Offered)
	}
	// Admitted = sent and not shed.
	admitted := tot.Outcomes[wire.OutcomeOK.String()] + tot.Outcomes[wire.OutcomeFallback.String()] + tot.Outcomes[wire.OutcomeError.String()] + tot.Outcomes[wire.OutcomeTimeout.String()]
	if uint64(tot.Admitted.TotalCount()) != admitted {
		t.Errorf("admitted histogram has %d values, want %d", tot.Admitted.TotalCount(), admitted)
	}
	// Timeouts took at least the client timeout, from their intended time.
	if max := tot.Admitted.Max(); max < 1500*1000 {
		t.Errorf("admitted max latency %dµs < client timeout", max)
	}
}

// A connection refused is an error, and the accounting still holds.
func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	cfg := allRoutesConfig(url)
	fc := clockwork.NewFakeClock()
	g, err := New(cfg, WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, g, fc, 100, 300*time.Millisecond)
	tot := g.Totals()
	if tot.Offered == 0 || tot.Outcomes[wire.OutcomeError.String()] != tot.Offered-tot.Outcomes[wire.OutcomeGeneratorDropped.String()] {
		t.Errorf("refused: offered %d, outcomes %v", tot.Offered, tot.Outcomes)
	}
	// The error says why: a user who mistyped the port reads "connection
	// refused", not only "error".
	sent := tot.Offered - tot.Outcomes[wire.OutcomeGeneratorDropped.String()]
	if tot.NoAnswer["connection refused"] != sent || len(tot.NoAnswer) != 1 || len(tot.Status) != 0 {
		t.Errorf("refused: no answer %v, status %v; want connection refused %d", tot.NoAnswer, tot.Status, sent)
	}
}

// A server that closes the connection without answering: an error, by
// cause "connection closed (EOF)".
func TestConnectionClosedCause(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		c.Close()
	}))
	defer srv.Close()
	cfg := allRoutesConfig(srv.URL)
	cfg.Mix.Routes = map[string]float64{"standard": 1}
	cfg.MaxOutstanding = 1000
	fc := clockwork.NewFakeClock()
	g, err := New(cfg, WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, g, fc, 100, 200*time.Millisecond)
	tot := g.Totals()
	if tot.Offered == 0 || tot.Outcomes[wire.OutcomeError.String()] != tot.Offered ||
		tot.NoAnswer["connection closed (EOF)"] != tot.Offered || len(tot.NoAnswer) != 1 || len(tot.Status) != 0 {
		t.Errorf("closed: offered %d, outcomes %v, no answer %v, status %v", tot.Offered, tot.Outcomes, tot.NoAnswer, tot.Status)
	}
	if uint64(got.Load()) != tot.Offered {
		t.Errorf("server got %d requests, offered %d", got.Load(), tot.Offered)
	}
}

// Latency counts from the intended arrival time: an arrival sent late
// carries its lateness.
func TestLatencyFromIntendedTime(t *testing.T) {
	srv := newBehaviourServer(t, "1500", "ok")
	cfg := allRoutesConfig(srv.URL)
	cfg.Mix.Routes = map[string]float64{"standard": 1}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mix := newMixer(cfg.Mix, 1)
	g.arrive(time.Now().Add(-700*time.Millisecond), mix)
	g.wg.Wait()
	tot := g.Totals()
	if tot.Outcomes[wire.OutcomeOK.String()] != 1 {
		t.Fatalf("outcomes %v", tot.Outcomes)
	}
	// 699 ms: HdrHistogram keeps 3 significant digits (700.1 ms reads 699.9).
	if min := tot.Admitted.Min(); min < 699*1000 {
		t.Errorf("latency %dµs: the 700 ms of lateness was not counted", min)
	}
}

// A server that stalls makes the arrivals queued behind the stall show it:
// the generator keeps sending on schedule (open loop) and each queued
// request's latency runs from its intended time. The stall lasts from the
// first arrival (0 ms) until 600 ms on the generator's clock, when the run
// ends: the arrival at t waited 600 ms − t.
func TestStallShowsInLatency(t *testing.T) {
	var mu sync.Mutex // the server serves one request at a time
	var first atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if first.CompareAndSwap(false, true) {
			<-release
		}
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()
	cfg := allRoutesConfig(srv.URL)
	cfg.Mix.Routes = map[string]float64{"standard": 1}
	cfg.Arrival = ArrivalConstant
	cfg.MaxOutstanding = 1000
	cfg.ClientTimeout = 20 * time.Second
	fc := clockwork.NewFakeClock()
	g, err := New(cfg, WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	_ = g.SetRate(100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := startRun(t, g, ctx)
	advance(t, fc, 600*time.Millisecond)
	close(release) // the stall ends at 600 ms: every queued request is answered now
	for deadline := time.Now().Add(20 * time.Second); g.Outstanding() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still outstanding after the stall", g.Outstanding())
		}
	}
	cancel() // at 600 ms, with every answer in
	stop()
	tot := g.Totals()
	if tot.Unaccounted() != 0 || tot.Outcomes[wire.OutcomeOK.String()] != tot.Offered {
		t.Fatalf("offered %d, outcomes %v", tot.Offered, tot.Outcomes)
	}
	// Open loop: the stall did not slow the arrivals (at 0, 10, …, 600 ms:
	// the one due at 600 ms is sent before the cancel; a closed loop would
	// have sent one).
	if tot.Offered != 61 {
		t.Errorf("%d arrivals in 0…600 ms at 100/s, want exactly 61", tot.Offered)
	}
	// The arrivals at 0…400 ms waited ≥ 200 ms for the stall (41 of them);
	// the first waited 600 ms.
	h := tot.Admitted
	slow := int64(0)
	for _, b := range h.Distribution() {
		if b.From >= 199*1000 {
			slow += b.Count
		}
	}

	if slow != 41 {
		t.Errorf("%d requests ≥ 200 ms, want the 41 intended 200 ms or more before the stall ended", slow)
	}
	if m := h.Max(); m < 599*1000 || m > 602*1000 {
		t.Errorf("max latency %dµs, want 600 ms (the first arrival, at 0 ms, waited until 600 ms)", m)
	}
}

// Rate 0 pauses the arrivals; Tick windows count them. On a fake clock the
// counts are exact: 200/s for 300 ms is 60 arrivals in [0, 300 ms) and the
// one due at 300 ms, sent before the pause, then none.
func TestPauseAndTick(t *testing.T) {
	srv := newBehaviourServer(t, "1500", "ok")
	g, fc, cancel, stop := startStandardRun(t, srv.URL, 200, 0)
	defer cancel()
	advance(t, fc, 300*time.Millisecond)
	if err := g.SetRate(0); err != nil {
		t.Fatal(err)
	}
	waitWoken(t, g)
	w1 := g.Tick()
	fc.Advance(300 * time.Millisecond)
	w2 := g.Tick()
	cancel()
	stop()
	if w1.Offered != 61 || w1.OfferedTotal != w1.Offered {
		t.Errorf("first window: offered %d, total %d; want 61", w1.Offered, w1.OfferedTotal)
	}
	if w2.Offered != 0 {
		t.Errorf("paused window offered %d", w2.Offered)
	}
	if w2.TargetRPS != 0 || w1.Duration != 300*time.Millisecond || w2.Duration != 300*time.Millisecond {
		t.Errorf("windows: %+v / %+v", w1, w2)
	}
	if err := g.Run(context.Background()); err == nil {
		t.Error("second Run did not fail")
	}
	tot := g.Totals()
	if tot.Unaccounted() != 0 {
		t.Errorf("unaccounted %d", tot.Unaccounted())
	}
	p := w1.ByPriority["P0"]
	if w1.ByPriority["P0"].Offered+w1.ByPriority["P1"].Offered+w1.ByPriority["P2"].Offered != w1.Offered {
		t.Errorf("per-priority offered does not add up: %+v", w1.ByPriority)
	}
	if p.OK > p.Finished || p.Finished > p.OfferedTotal {
		t.Errorf("P0 window inconsistent: %+v", p)
	}
	for _, name := range Outcomes {
		if _, ok := w1.Outcomes[name]; !ok {
			t.Errorf("window lacks wire.Outcome %s", name)
		}
	}
}

// Slow clients read at the set speed: 20 KB at 40 KB/s takes ≥ ~0.5 s.
func TestSlowClients(t *testing.T) {
	payload := strings.Repeat("x", 20<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, payload)
	}))
	defer srv.Close()
	cfg := allRoutesConfig(srv.URL)
	cfg.Mix.Routes = map[string]float64{"export": 1}
	cfg.ClientTimeout = 5 * time.Second
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetSlowClients(1, 40); err != nil {
		t.Fatal(err)
	}
	runFor(t, g, nil, 20, 400*time.Millisecond)
	tot := g.Totals()
	if tot.Outcomes[wire.OutcomeOK.String()] == 0 || tot.Outcomes[wire.OutcomeOK.String()] != tot.Offered {
		t.Fatalf("outcomes %v", tot.Outcomes)
	}
	if min := tot.Admitted.Min(); min < 400*1000 {
		t.Errorf("a slow reader finished 20 KB at 40 KB/s in %dµs", min)
	}
	// A slow reader past the client timeout is a timeout.
	g2, _ := New(func() Config { c := cfg; c.ClientTimeout = 200 * time.Millisecond; return c }())
	_ = g2.SetSlowClients(1, 10)
	runFor(t, g2, nil, 20, 300*time.Millisecond)
	if tot := g2.Totals(); tot.Outcomes[wire.OutcomeTimeout.String()] != tot.Offered || tot.Offered == 0 {
		t.Errorf("slow reader past deadline: %v", tot.Outcomes)
	}
}

// Run with a context that has already ended offers nothing and returns.
func TestRunEndedContext(t *testing.T) {
	g, err := New(allRoutesConfig("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	_ = g.SetRate(1000)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if err := g.Run(ctx); err != nil {
		t.Fatal(err)
	}
	tot := g.Totals()
	if tot.Offered != 0 || tot.Elapsed < 0 || tot.Unaccounted() != 0 {
		t.Errorf("offered %d, elapsed %v", tot.Offered, tot.Elapsed)
	}
}

// A rate change takes effect at once, not after the gap the old rate had
// scheduled: from 1/s (arrivals at 0 and 1 s) to 500/s at 100 ms gives an
// arrival at once and then one every 2 ms.
func TestSetRateLive(t *testing.T) {
	srv := newBehaviourServer(t, "1500", "ok")
	cfg := allRoutesConfig(srv.URL)
	cfg.Mix.Routes = map[string]float64{"standard": 1}
	cfg.Arrival = ArrivalConstant
	cfg.MaxOutstanding = 10000
	fc := clockwork.NewFakeClock()
	g, err := New(cfg, WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	_ = g.SetRate(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := startRun(t, g, ctx)
	advance(t, fc, 100*time.Millisecond)
	if w := g.Tick(); w.Offered != 1 {
		t.Errorf("%d arrivals in the first 100 ms at 1/s, want the one at 0", w.Offered)
	}
	_ = g.SetRate(500)
	waitOffered(t, g, 2) // the arrival at 100 ms: the old rate's timer is gone
	advance(t, fc, 300*time.Millisecond)
	w := g.Tick()
	cancel()
	stop()
	// 100 ms, 102 ms, …, 400 ms; a rate stuck at 1/s would give 0.
	if w.Offered != 151 {
		t.Errorf("%d arrivals in the 300 ms after SetRate(500), want 151", w.Offered)
	}
	if w.TargetRPS != 500 || g.Rate() != 500 {
		t.Errorf("target %v", w.TargetRPS)
	}
}

// A server that closes a kept-alive connection on its second request
// without answering: net/http resends such a GET on another connection on
// its own. The server got those requests; the client counts them among its
// attempts and retries (Resent), so the attempts equal what the server got
// (they were hidden: 300 offered, 599 received, attempts 300).
func TestResentCounted(t *testing.T) {
	var (
		got  atomic.Int64
		mu   sync.Mutex
		seen = map[string]bool{} // remote addresses that sent a request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		mu.Lock()
		reused := seen[r.RemoteAddr]
		seen[r.RemoteAddr] = true
		mu.Unlock()
		if reused {
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			c.Close()
			return
		}
		writeOK(w, r, nil)
	}))
	defer srv.Close()
	cfg := allRoutesConfig(srv.URL)
	cfg.Mix.Routes = map[string]float64{"standard": 1}
	cfg.Arrival = ArrivalConstant
	fc := clockwork.NewFakeClock()
	g, err := New(cfg, WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetRate(100); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := startRun(t, g, ctx)
	// One request at a time: each finds the previous one's connection idle.
	for i := range 20 {
		if err := fc.BlockUntilContext(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		waitOffered(t, g, uint64(i+1))
		for deadline := time.Now().Add(20 * time.Second); g.Outstanding() > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("request %d never ended", i+1)
			}
		}
		fc.Advance(10 * time.Millisecond)
	}
	cancel()
	stop()
	tot := g.Totals()
	if tot.Unaccounted() != 0 || tot.Outcomes[wire.OutcomeOK.String()] != tot.Offered {
		t.Errorf("offered %d, outcomes %v", tot.Offered, tot.Outcomes)
	}
	if uint64(got.Load()) != tot.Attempts || tot.Attempts != tot.Offered+tot.Resent || tot.Retries != tot.Resent {
		t.Errorf("server got %d requests; client: offered %d, attempts %d, retries %d, resent %d",
			got.Load(), tot.Offered, tot.Attempts, tot.Retries, tot.Resent)
	}
	if tot.Resent == 0 {
		t.Errorf("no request resent: the test cannot tell (server got %d, offered %d)", got.Load(), tot.Offered)
	}
}
