package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

func TestRetryPolicyRetries(t *testing.T) {
	all := RetryPolicy{Attempts: 3, On: RetryOnAll}
	def := RetryPolicy{Attempts: 3}
	for _, tt := range []struct {
		o         wire.Outcome
		status    int
		all, dflt bool
	}{
		{wire.OutcomeOK, 200, false, false},
		{wire.OutcomeFallback, 200, false, false},
		{wire.OutcomeTimeout, 0, true, true},   // the client's deadline
		{wire.OutcomeTimeout, 504, true, true}, // the gateway's
		{wire.OutcomeShedQueueFull, 503, true, true},
		{wire.OutcomeShedOverload, 503, true, true},
		{wire.OutcomeError, 500, true, true},
		{wire.OutcomeShedRateLimit, 429, true, false},
		{wire.OutcomeShedOverload, 429, true, false},
		{wire.OutcomeError, 0, true, false}, // refused, reset
		{wire.OutcomeError, 404, false, false},
	} {
		if got := all.retries(tt.o, tt.status); got != tt.all {
			t.Errorf("all: %s %d retried %v, want %v", tt.o, tt.status, got, tt.all)
		}
		if got := def.retries(tt.o, tt.status); got != tt.dflt {
			t.Errorf("default: %s %d retried %v, want %v", tt.o, tt.status, got, tt.dflt)
		}
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	for _, tt := range []struct {
		p    RetryPolicy
		want string
	}{
		{RetryPolicy{Attempts: 11}, "retry.attempts"},
		{RetryPolicy{Attempts: 2, On: []string{"404"}}, "retry.on"},
		{RetryPolicy{Backoff: -1}, "retry.backoff"},
		{RetryPolicy{MaxBackoff: -1}, "retry.max_backoff"},
		{RetryPolicy{Budget: 1.5}, "retry.budget"},
		{RetryPolicy{BudgetMinPerSecond: -1}, "retry.budget_min_per_second"},
	} {
		if err := tt.p.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %s", tt.p, err, tt.want)
		}
	}
	if err := (RetryPolicy{Attempts: 3, On: RetryOnAll, Backoff: time.Millisecond, Budget: 0.1}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestRetryBackoff(t *testing.T) {
	p := RetryPolicy{Backoff: 100 * time.Millisecond, MaxBackoff: 350 * time.Millisecond}
	top := func() float64 { return 0.999999999 }
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 350 * time.Millisecond, 40: 350 * time.Millisecond} {
		if got := p.backoff(n, top); got < want-time.Microsecond || got > want {
			t.Errorf("retry %d: %v, want just under %v", n, got, want)
		}
	}
	if got := p.backoff(2, func() float64 { return 0.5 }); got != 100*time.Millisecond {
		t.Errorf("full jitter: %v", got)
	}
	if got := (RetryPolicy{Backoff: time.Second}).backoff(5, top); got > 10*time.Second || got < 9*time.Second {
		t.Errorf("default cap 10 × backoff: %v", got)
	}
	if got := (RetryPolicy{}).backoff(3, top); got != 0 {
		t.Errorf("no backoff: %v", got)
	}
}

// The budget lets retries reach ratio × requests over the last 10 s plus
// the reserve, and forgets what is older.
func TestRetryBudget(t *testing.T) {
	b := newRetryBudget(RetryPolicy{Budget: 0.1, BudgetMinPerSecond: 0.2})
	t0 := time.Unix(1_000_000, 0)
	for i := range 100 {
		b.request(t0.Add(time.Duration(i) * 10 * time.Millisecond))
	}
	got := 0
	for b.withdraw(t0.Add(time.Second)) {
		got++
	}
	if got != 12 { // 10 % of 100, plus 0.2/s × 10 s
		t.Errorf("%d retries allowed, want 12", got)
	}
	if b.withdraw(t0.Add(5 * time.Second)) {
		t.Error("a retry allowed while the window still holds the spent ones")
	}
	if !b.withdraw(t0.Add(11 * time.Second)) {
		t.Error("the window did not roll: the reserve is back after 10 s")
	}
}

// attemptServer answers each attempt by its X-Levee-Attempt header.
type attemptServer struct {
	*httptest.Server
	mu     sync.Mutex
	byTry  map[int]int // attempt number → requests
	sheds  int         // answers with a shed outcome header; guarded by mu
	answer func(attempt int, w http.ResponseWriter)
}

func newAttemptServer(answer func(attempt int, w http.ResponseWriter)) *attemptServer {
	s := &attemptServer{byTry: map[int]int{}, answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.Header.Get(wire.HeaderAttempt))
		rec := httptest.NewRecorder()
		s.answer(n, rec)
		s.mu.Lock()
		s.byTry[n]++
		if o, ok := wire.ParseOutcome(rec.Header().Get(wire.HeaderOutcome)); ok {
			if _, shed := o.ShedReason(); shed {
				s.sheds++
			}
		} else if rec.Code == http.StatusTooManyRequests { // the client reads a bare 429 as a rate-limit shed
			s.sheds++
		}
		s.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	return s
}

// shedAnswers counts the attempts answered with a shed (queue_full, ratelimit).
func (s *attemptServer) shedAnswers() int { return s.sheds }

func shed503(w http.ResponseWriter) {
	w.Header().Set(wire.HeaderOutcome, wire.OutcomeShedQueueFull.String())
	w.WriteHeader(http.StatusServiceUnavailable)
}

func predictConfig(url string) Config {
	return Config{
		Targets:       []string{url},
		Mix:           Mix{Priorities: map[string]float64{"P1": 1}, Keys: map[string]string{"P1": "k"}, Routes: map[string]float64{"predict": 1}},
		Arrival:       ArrivalConstant,
		ClientTimeout: 10 * time.Second, // no timeouts on a loaded machine: the tests count other outcomes
		// runAll stops the arrivals only once its poller sees n offered: on
		// a starved machine the open loop offers many more meanwhile (1978
		// for 200 seen), and none of them may be dropped.
		MaxOutstanding: 100000,
		Seed:           3,
	}
}

// Offered counts arrivals; each ends in one outcome after its last
// attempt; attempts and retries are counted apart, and the server sees
// exactly the attempts counted.
func TestRetryAccounting(t *testing.T) {
	for _, tt := range []struct {
		name     string
		policy   RetryPolicy
		answer   func(int, http.ResponseWriter)
		outcome  wire.Outcome
		attempts int // per request
	}{
		{"shed, error, then ok", RetryPolicy{Attempts: 3}, func(n int, w http.ResponseWriter) {
			switch n {
			case 1:
				shed503(w)
			case 2:
				w.WriteHeader(http.StatusInternalServerError)
			default:
				w.Write([]byte(`{"ok":true}`))
			}
		}, wire.OutcomeOK, 3},
		{"out of attempts: the last attempt's outcome", RetryPolicy{Attempts: 2}, func(n int, w http.ResponseWriter) {
			if n == 1 {
				shed503(w)
				return
			}
			w.WriteHeader(http.StatusInternalServerError)
		}, wire.OutcomeError, 2},
		{"429 not retried by default", RetryPolicy{Attempts: 4}, func(n int, w http.ResponseWriter) {
			w.Header().Set(wire.HeaderOutcome, wire.OutcomeShedRateLimit.String())
			w.WriteHeader(http.StatusTooManyRequests)
		}, wire.OutcomeShedRateLimit, 1},
		{"429 retried when asked, with backoff", RetryPolicy{Attempts: 2, On: []string{RetryOn429}, Backoff: 5 * time.Millisecond}, func(n int, w http.ResponseWriter) {
			if n == 1 {
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.Write([]byte(`{}`))
		}, wire.OutcomeOK, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newAttemptServer(tt.answer)
			defer srv.Close()
			cfg := predictConfig(srv.URL)
			cfg.Retry = tt.policy
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			runAll(t, g, 200, 50)
			tot := g.Totals()
			if tot.Unaccounted() != 0 || tot.Offered == 0 {
				t.Fatalf("offered %d, outcomes %v", tot.Offered, tot.Outcomes)
			}
			if got := tot.Outcomes[tt.outcome.String()]; got != tot.Offered {
				t.Errorf("%d of %d ended %s: %v", got, tot.Offered, tt.outcome, tot.Outcomes)
			}
			want := tot.Offered * uint64(tt.attempts)
			if tot.Attempts != want || tot.Retries != want-tot.Offered {
				t.Errorf("attempts %d retries %d, want %d and %d", tot.Attempts, tot.Retries, want, want-tot.Offered)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			var seen uint64
			for n, c := range srv.byTry {
				seen += uint64(c)
				if n < 1 || n > tt.attempts || uint64(c) != tot.Offered {
					t.Errorf("attempt %d seen %d times, offered %d", n, c, tot.Offered)
				}
			}
			if seen != tot.Attempts {
				t.Errorf("server saw %d attempts, client counted %d", seen, tot.Attempts)
			}
			// Every shed attempt is an outcome or a retried shed, once.
			shedOutcomes := tot.Outcomes[wire.OutcomeShedQueueFull.String()] + tot.Outcomes[wire.OutcomeShedRateLimit.String()]
			if got := shedOutcomes + tot.ShedRetried; got != uint64(srv.shedAnswers()) {
				t.Errorf("sheds: %d outcomes + %d retried, server shed %d", shedOutcomes, tot.ShedRetried, srv.shedAnswers())
			}
			if h := tot.ByPriority["P1"].Latency.TotalCount(); h != int64(tot.Offered) {
				t.Errorf("%d latencies for %d requests", h, tot.Offered)
			}
		})
	}
}

// A budget stops most retries; the refused ones end with the attempt they
// had and are counted.
func TestRetryBudgetInTheGenerator(t *testing.T) {
	srv := newAttemptServer(func(n int, w http.ResponseWriter) { shed503(w) })
	defer srv.Close()
	cfg := predictConfig(srv.URL)
	cfg.Retry = RetryPolicy{Attempts: 3, Budget: 0.1}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, g, 400, 200)
	tot := g.Totals()
	if tot.Unaccounted() != 0 || tot.Outcomes[wire.OutcomeShedQueueFull.String()] != tot.Offered {
		t.Fatalf("offered %d outcomes %v", tot.Offered, tot.Outcomes)
	}
	if limit := uint64(0.1*float64(tot.Offered)) + 1; tot.Retries > limit {
		t.Errorf("%d retries for %d requests: over the 10 %% budget", tot.Retries, tot.Offered)
	}
	// Every request asked for a retry at least once (every attempt fails);
	// a request ends refused at most once.
	if tot.RetriesDenied > tot.Offered || tot.RetriesDenied+tot.Retries < tot.Offered || tot.Attempts != tot.Offered+tot.Retries {
		t.Errorf("attempts %d retries %d denied %d offered %d", tot.Attempts, tot.Retries, tot.RetriesDenied, tot.Offered)
	}
}

// runAll offers n requests at rate, then waits until every one has ended
// (retries included) before ending Run, so nothing is cut short however
// slow the machine.
func runAll(t *testing.T, g *Generator, rate float64, n uint64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := startRun(t, g, ctx)
	if err := g.SetRate(rate); err != nil {
		t.Fatal(err)
	}
	waitOffered(t, g, n)
	if err := g.SetRate(0); err != nil {
		t.Fatal(err)
	}
	// Once the scheduler has taken the rate change it is not inside an
	// arrival (counted offered, not yet outstanding): outstanding 0 then
	// means every request ended, and none is cut short by the stop below
	// (a stopped Run sends no retry).
	waitWoken(t, g)
	deadline := time.Now().Add(30 * time.Second)
	for g.Outstanding() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still outstanding", g.Outstanding())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	stop()
}

// When Run stops, requests waiting to retry end with the attempt they had:
// no attempt is sent after the end, and nothing is lost.
func TestRetriesStopWithRun(t *testing.T) {
	srv := newAttemptServer(func(n int, w http.ResponseWriter) { shed503(w) })
	defer srv.Close()
	cfg := predictConfig(srv.URL)
	cfg.Retry = RetryPolicy{Attempts: 5, Backoff: time.Hour, MaxBackoff: time.Hour}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// runFor fails when Run has not returned 30 s after its 200 ms: it
	// waited for an hour's backoff after it stopped.
	runFor(t, g, nil, 100, 200*time.Millisecond)
	tot := g.Totals()
	if tot.Unaccounted() != 0 || tot.Outstanding != 0 {
		t.Fatalf("offered %d outcomes %v outstanding %d", tot.Offered, tot.Outcomes, tot.Outstanding)
	}
	if tot.Retries != 0 || tot.Attempts != tot.Offered {
		t.Errorf("attempts %d retries %d for %d requests: a retry was sent after the end", tot.Attempts, tot.Retries, tot.Offered)
	}
}
