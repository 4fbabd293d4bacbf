package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

// movableDeadline is a request context whose deadline the test moves and
// whose Done never closes: it holds the moment after a deadline passed
// and before the context's timer ended it, in which the gateway judges an
// answer that came just then.
type movableDeadline struct {
	context.Context
	mu sync.Mutex
	at time.Time
}

func (c *movableDeadline) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at, true
}

func (c *movableDeadline) passNow() {
	c.mu.Lock()
	c.at = time.Now().Add(-time.Millisecond)
	c.mu.Unlock()
}

// TestFailureAsDeadlinePassesIsTimeout: a call that every node refused
// (429), or failed (5xx), just as the client's deadline passed ends as a
// timeout (504 deadline_exceeded, outcome timeout), as a call cut by the
// deadline does — not as an upstream error (502). The node moves the
// request's deadline into the past before it answers, so the answer is
// judged after the deadline whatever the machine's speed. (The client's
// side cannot carry such a context over a socket: the gateway's handler
// is called directly; the node is real HTTP.) Retries are off, so no
// requeue hides the refusal. Before the fix both answered 502.
func TestFailureAsDeadlinePassesIsTimeout(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			dl := &movableDeadline{Context: context.Background(), at: time.Now().Add(time.Hour)}
			node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == wire.PathHealthz {
					return
				}
				dl.passNow()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"error":{"message":"full"}}`))
			}))
			t.Cleanup(node.Close)
			cfg := testConfig(strings.TrimPrefix(node.URL, "http://"))
			cfg.Routes.Predict.Timeout = 2 * time.Hour // the client's deadline (dl) is the earlier one
			cfg.Defenses.Retry, cfg.Defenses.Fallback = false, false
			s := startServer(t, cfg)

			req := httptest.NewRequest(http.MethodPost, wire.PathPredict, strings.NewReader(predictBody)).WithContext(dl)
			req.Header.Set("Authorization", "Bearer k1")
			rec := httptest.NewRecorder()
			s.G.Handler().ServeHTTP(rec, req)
			var e wire.ErrorBody
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code != http.StatusGatewayTimeout || e.Error.Code != wire.CodeDeadlineExceeded ||
				rec.Header().Get(wire.HeaderOutcome) != wire.OutcomeTimeout.String() {
				t.Fatalf("answer %d %s (outcome %q), want 504 %s", rec.Code, rec.Body.Bytes(), rec.Header().Get(wire.HeaderOutcome), wire.CodeDeadlineExceeded)
			}
			fams := scrape(t, s)
			if got := counterSum(fams, wire.MetricRequests, map[string]string{"route": "predict", "outcome": "timeout"}); got != 1 {
				t.Errorf("levee_requests_total{route=predict,outcome=timeout} = %v, want 1", got)
			}
			if got := counterSum(fams, wire.MetricRequests, map[string]string{"route": "predict"}); got != 1 {
				t.Errorf("levee_requests_total{route=predict} = %v, want 1 (one outcome)", got)
			}
		})
	}
}

// blockingStore is a shared rate-limit store that never answers: each
// decision waits until its context ends.
type blockingStore struct{}

func (blockingStore) Allow(ctx context.Context, _ string, _ ratelimit.Rule, _ int64, _ time.Time) (ratelimit.Decision, error) {
	<-ctx.Done()
	return ratelimit.Decision{}, ctx.Err()
}

// TestDeadlinePassingInTheStoreIsTimeout: a request whose deadline passes
// while the shared rate-limit store decides (the real Failover in front
// of a store that does not answer, its own timeout far away) is a timeout
// — 504 deadline_exceeded, outcome timeout — under fail_open false as
// under true, not a 429 rate_limit_store_unavailable shed: the request's
// deadline stopped the decision, not the store. Before the fix the
// fail-closed gateway answered 429 and counted shed_ratelimit.
func TestDeadlinePassingInTheStoreIsTimeout(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail_open=%v", failOpen), func(t *testing.T) {
			fm := newFakeModel(t, 4, 0)
			cfg := testConfig(fm.addr())
			cfg.RateLimit.Store.FailOpen = failOpen
			cfg.RateLimit.Rules = []RuleConfig{{Tenant: "*", Route: "*", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 9, Window: time.Second}, Cost: CostRequests}}
			fo, err := ratelimit.NewFailover(blockingStore{}, ratelimit.FailoverTimeout(time.Hour), ratelimit.FailoverFailClosed(!failOpen))
			if err != nil {
				t.Fatal(err)
			}
			s := startServer(t, cfg, WithStore(fo))
			a := call(t, "POST", "http://"+s.Addr()+wire.PathPredict, "k1", predictBody, wire.HeaderDeadlineMs, "200")
			if a.status != http.StatusGatewayTimeout || a.outcome != wire.OutcomeTimeout.String() || a.errorCode() != wire.CodeDeadlineExceeded {
				t.Fatalf("deadline passing in the store: %v; want 504 %s", a, wire.CodeDeadlineExceeded)
			}
			fams := scrape(t, s)
			if got := counterSum(fams, wire.MetricRequests, map[string]string{"route": "predict", "outcome": "timeout"}); got != 1 {
				t.Errorf("levee_requests_total{route=predict,outcome=timeout} = %v, want 1", got)
			}
			if got := counterSum(fams, wire.MetricShed, nil); got != 0 {
				t.Errorf("levee_shed_total = %v, want 0: the request was not shed", got)
			}
			if fm.arrivals.Load() != 0 {
				t.Errorf("%d calls reached the model, want none", fm.arrivals.Load())
			}
		})
	}
}

// TestAgentTimeoutAtAdmissionCountedAsTimeout: an agent task whose
// deadline passes before it is admitted (here in the rate-limit store)
// is counted in levee_agent_tasks_total as a timeout, as its request is,
// not as shed. Before the fix the request said timeout and the task shed.
func TestAgentTimeoutAtAdmissionCountedAsTimeout(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	cfg := testConfig(fm.addr())
	cfg.RateLimit.Rules = []RuleConfig{{Tenant: "*", Route: "*", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 9, Window: time.Second}, Cost: CostRequests}}
	fo, err := ratelimit.NewFailover(blockingStore{}, ratelimit.FailoverTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, cfg, WithStore(fo))
	a := call(t, "POST", "http://"+s.Addr()+wire.PathAgent, "k1", agentBody, wire.HeaderDeadlineMs, "200")
	if a.status != http.StatusGatewayTimeout || a.outcome != wire.OutcomeTimeout.String() {
		t.Fatalf("agent task whose deadline passed in the store: %v; want 504 timeout", a)
	}
	fams := scrape(t, s)
	for result, want := range map[string]float64{wire.AgentTaskTimeout: 1, wire.AgentTaskShed: 0} {
		if got := counterSum(fams, wire.MetricAgentTasks, map[string]string{"result": result}); got != want {
			t.Errorf("levee_agent_tasks_total{result=%s} = %v, want %v", result, got, want)
		}
	}
}

// TestRefusalStandingAfterDeadlineIsTimeout: a call that every node
// refused (429) before the client's deadline, whose deadline then passed
// before its requeue was decided — the microseconds between callModel's
// judgement and requeue's — and whose refusal stands (no retry token
// with nothing in flight to wait for, or the retry defense off) is a
// timeout, 504 deadline_exceeded, as one refused as the deadline passed
// (TestFailureAsDeadlinePassesIsTimeout), not an upstream error (502).
// No node can move the deadline into that gap (callModel, looking after
// the answer, would see it moved), so the test hands requeue what
// callModel returned and a request whose deadline has just passed (its
// context not yet ended: movableDeadline). Before the fix requeue let the
// refusal stand and the request was answered 502.
func TestRefusalStandingAfterDeadlineIsTimeout(t *testing.T) {
	for _, retry := range []bool{true, false} {
		t.Run(fmt.Sprintf("retry=%v", retry), func(t *testing.T) {
			fm := newFakeModel(t, 1, 0)
			cfg := testConfig(fm.addr())
			cfg.Defenses.Retry = retry
			cfg.Upstream.RetryBudget.MinPerSecond = 0 // no token: nothing in flight, the requeue is refused
			s := startServer(t, cfg)
			g := s.G
			dl := &movableDeadline{Context: context.Background(), at: time.Now().Add(time.Hour)}
			permit, err := g.bulkheads[classAI].Acquire(dl, admit.P1)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			x := &exchange{g: g, w: rec, route: routeChat, id: Identity{Priority: admit.P1}, ctx: dl}
			refused := callResult{rtt: time.Millisecond, end: time.Now(), dropped: true, refused: true} // callModel's, before the deadline
			dl.passNow()
			again, sh := g.requeue(x, &permit, refused)
			if again || sh == nil || sh.outcome != wire.OutcomeTimeout || sh.status != http.StatusGatewayTimeout {
				t.Fatalf("requeue after the deadline passed: again %v, shed %+v; want the refusal judged a timeout (504)", again, sh)
			}
			if st := g.bulkheads[classAI].Stats(); st.Inflight != 0 {
				t.Errorf("%d in flight in the ai bulkhead after the refusal stood, want 0 (the place given back)", st.Inflight)
			}
			x.shed(sh)
			var e wire.ErrorBody
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code != http.StatusGatewayTimeout || e.Error.Code != wire.CodeDeadlineExceeded {
				t.Errorf("answer %d %s, want 504 %s", rec.Code, rec.Body.Bytes(), wire.CodeDeadlineExceeded)
			}
		})
	}
}

// TestDeadlineHeaders: what the gateway takes for the client's deadline,
// as the node sees it in X-Levee-Deadline-Ms: X-Request-Timeout-Ms alone
// is honoured; with both, X-Levee-Deadline-Ms wins; the route's timeout
// caps either (a client cannot buy more time than the route gives). The
// cases are seconds apart, so a slow machine cannot blur them.
func TestDeadlineHeaders(t *testing.T) {
	seen := make(chan string, 1)
	up := newFakeModel(t, 1, 0)
	up.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.PathPredict {
			seen <- r.Header.Get(wire.HeaderDeadlineMs)
		}
		_, _ = w.Write([]byte(`{"decision":"APPROVE","score":1}`))
	})
	cfg := testConfig(up.addr())
	cfg.Routes.Predict.Timeout = 20 * time.Second
	s := startServer(t, cfg)
	for _, tc := range []struct {
		name     string
		hdr      []string
		min, max int // what the node may see, in ms
	}{
		{"alias alone", []string{wire.HeaderRequestTimeoutMs, "2000"}, 1, 2000},
		{"both: X-Levee-Deadline-Ms wins", []string{wire.HeaderDeadlineMs, "15000", wire.HeaderRequestTimeoutMs, "2000"}, 2001, 15000},
		{"beyond the route's timeout", []string{wire.HeaderDeadlineMs, "3600000"}, 2001, 20000},
		{"alias beyond the route's timeout", []string{wire.HeaderRequestTimeoutMs, "3600000"}, 2001, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := call(t, "POST", "http://"+s.Addr()+wire.PathPredict, "k1", predictBody, tc.hdr...)
			if a.status != 200 {
				t.Fatalf("%v", a)
			}
			got := <-seen
			var ms int
			if _, err := fmt.Sscan(got, &ms); err != nil || ms < tc.min || ms > tc.max {
				t.Errorf("the node saw %s %q, want [%d, %d]", wire.HeaderDeadlineMs, got, tc.min, tc.max)
			}
		})
	}
}
