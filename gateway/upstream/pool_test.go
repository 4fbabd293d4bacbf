package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// testNode is a loopback model node whose behaviour a test can switch.
type testNode struct {
	srv      *httptest.Server
	hits     atomic.Int64
	healthy  atomic.Bool
	status   atomic.Int64  // status for /work; 0 = 200
	lastDL   atomic.Value  // string: last X-Levee-Deadline-Ms seen ("<none>" if absent)
	release  chan struct{} // /hold waits on it after sending its first byte
	arrived  chan struct{} // /hold signals here once its first byte is sent
	bodyRead atomic.Int64  // bytes of request body seen on /work
	checks   atomic.Int64  // health checks received
}

func newTestNode(t *testing.T) *testNode {
	t.Helper()
	n := &testNode{release: make(chan struct{}), arrived: make(chan struct{}, 64)}
	n.healthy.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		n.checks.Add(1)
		if !n.healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		n.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		n.bodyRead.Add(int64(len(b)))
		if v, ok := r.Header[DeadlineHeader]; ok {
			n.lastDL.Store(strings.Join(v, ","))
		} else {
			n.lastDL.Store("<none>")
		}
		if s := n.status.Load(); s != 0 {
			w.WriteHeader(int(s))
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		n.hits.Add(1)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "h") // the first byte: the pool returns the answer here
		w.(http.Flusher).Flush()
		n.arrived <- struct{}{}
		select {
		case <-n.release:
		case <-r.Context().Done():
		}
		io.WriteString(w, "eld")
	})
	n.srv = httptest.NewServer(mux)
	t.Cleanup(n.srv.Close)
	return n
}

// resetNode accepts connections and answers every request by resetting the
// connection (RST) after reading the request: a connection-level failure
// with no response headers.
func resetNode(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// deadURL returns a loopback URL where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	return deadURLs(t, 1)[0]
}

// deadURLs returns n distinct addresses where nothing listens: ports
// held open together (so distinct), then freed.
func deadURLs(t *testing.T, n int) []string {
	t.Helper()
	urls := make([]string, n)
	for i := range urls {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		urls[i] = "http://" + ln.Addr().String()
	}
	return urls
}

func newPool(t *testing.T, cfg Config, opts ...Option) *Pool {
	t.Helper()
	if cfg.DialTimeout == 0 {
		// Exact accounting must not depend on scheduling: on a loaded
		// machine a loopback dial to a live node can exceed the 1 s default.
		cfg.DialTimeout = 10 * time.Second
	}
	// Attempt timeouts and hedge delays never fire unless a test brings
	// its own scheduler: on a loaded machine a real timer of a few
	// milliseconds would decide tests that are not about them.
	opts = append([]Option{WithAfterFunc(new(manualTimers).after)}, opts...)
	p, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// first always prefers the first eligible node, making tests deterministic.
var first = WithBalancer(BalancerFunc(func([]int64) int { return 0 }))

func doOK(t *testing.T, p *Pool, path string) string {
	t.Helper()
	resp, err := p.Do(context.Background(), http.MethodPost, path, []byte("hello"), nil)
	if err != nil {
		t.Fatalf("Do %s: %v", path, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("Do %s: status %d body %q err %v", path, resp.StatusCode, b, err)
	}
	return string(b)
}

func inflight(p *Pool) []int64 {
	var out []int64
	for _, s := range p.Stats() {
		out = append(out, s.Inflight)
	}
	return out
}

func TestPoolLeastOutstanding(t *testing.T) {
	checkGoroutines(t)
	a, b := newTestNode(t), newTestNode(t)
	p := newPool(t, Config{Nodes: []string{a.srv.URL, b.srv.URL}})

	var resps []*http.Response
	defer func() {
		close(a.release)
		close(b.release)
		for _, r := range resps {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}()
	hold := func() *http.Response {
		r, err := p.Do(context.Background(), http.MethodGet, "/hold", nil, nil)
		if err != nil {
			t.Fatalf("Do /hold: %v", err)
		}
		resps = append(resps, r)
		return r
	}
	// Four held calls (Do returns at the first byte; the body stays open): each
	// pick sees the other node as less loaded, so they split 2/2.
	for range 4 {
		hold()
	}
	if got := inflight(p); got[0] != 2 || got[1] != 2 {
		t.Fatalf("inflight after 4 held calls = %v, want [2 2]", got)
	}
	if a.hits.Load() != 2 || b.hits.Load() != 2 {
		t.Fatalf("hits a=%d b=%d, want 2/2", a.hits.Load(), b.hits.Load())
	}
	// Closing one of a's bodies makes a the idle one: the next call goes there.
	var fromA *http.Response
	for _, r := range resps {
		if strings.HasPrefix(a.srv.URL, "http://"+r.Request.URL.Host) {
			fromA = r
			break
		}
	}
	fromA.Body.Close()
	if got := inflight(p); got[0] != 1 || got[1] != 2 {
		t.Fatalf("inflight after closing one of a's bodies = %v, want [1 2]", got)
	}
	hold()
	if a.hits.Load() != 3 || b.hits.Load() != 2 {
		t.Fatalf("after freeing a: hits a=%d b=%d, want 3/2", a.hits.Load(), b.hits.Load())
	}
	// Double Close must not double-release.
	fromA.Body.Close()
	if got := inflight(p); got[0] != 2 || got[1] != 2 {
		t.Fatalf("inflight = %v, want [2 2]", got)
	}
}

func TestPoolOutstandingReturnsToZero(t *testing.T) {
	checkGoroutines(t)
	a, b := newTestNode(t), newTestNode(t)
	p := newPool(t, Config{Nodes: []string{a.srv.URL, b.srv.URL}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				resp, err := p.Do(context.Background(), http.MethodPost, "/work", []byte("x"), nil)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	var reqs uint64
	for _, s := range p.Stats() {
		if s.Inflight != 0 {
			t.Errorf("%s inflight %d after all bodies closed", s.Addr, s.Inflight)
		}
		reqs += s.Requests
	}
	if reqs != 400 || a.hits.Load()+b.hits.Load() != 400 {
		t.Fatalf("requests %d, hits %d+%d, want 400", reqs, a.hits.Load(), b.hits.Load())
	}
	if a.hits.Load() == 0 || b.hits.Load() == 0 {
		t.Fatalf("one node got nothing: a=%d b=%d", a.hits.Load(), b.hits.Load())
	}
}

func TestPoolRetriesConnectionFailures(t *testing.T) {
	tests := []struct {
		name string
		bad  func(t *testing.T) (string, func() int64) // URL and hit counter (nil: unknowable)
	}{
		{"reset after request", func(t *testing.T) (string, func() int64) {
			u, h := resetNode(t)
			return u, h.Load
		}},
		{"nothing listening", func(t *testing.T) (string, func() int64) { return deadURL(t), nil }},
		{"server closed", func(t *testing.T) (string, func() int64) {
			n := newTestNode(t)
			n.srv.Close()
			return n.srv.URL, n.hits.Load
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			// The good node first: a bad address made first is a port
			// freed again, which the good node's listener could take.
			good := newTestNode(t)
			badURL, badHits := tt.bad(t)
			p := newPool(t, Config{
				Nodes:       []string{badURL, good.srv.URL},
				RetryBudget: RetryBudgetConfig{MinPerSecond: 10}, // reserve 100 retries
				Breaker:     BreakerConfig{MinRequests: 1000},
				Outlier:     OutlierConfig{Disabled: true}, // keep sending to the bad node
			}, first)
			const n = 20
			for range n {
				if got := doOK(t, p, "/work"); got != "ok" {
					t.Fatalf("body %q", got)
				}
			}
			c := p.Counters()
			if c.RetriesSent != n || c.RetriesDenied != 0 {
				t.Fatalf("counters %+v, want %d retries sent", c, n)
			}
			st := p.Stats()
			if st[0].Failures != n || st[1].Requests != n || good.hits.Load() != n {
				t.Fatalf("stats %+v, good hits %d", st, good.hits.Load())
			}
			if good.bodyRead.Load() != 5*n {
				t.Fatalf("retried body bytes %d, want %d", good.bodyRead.Load(), 5*n)
			}
			if badHits != nil && tt.name == "reset after request" && badHits() != n {
				t.Fatalf("bad node saw %d requests, want %d", badHits(), n)
			}

			// Retries off: the connection error comes back.
			p.SetRetryEnabled(false)
			_, err := p.Do(context.Background(), http.MethodPost, "/work", []byte("x"), nil)
			if !errors.Is(err, ErrConn) {
				t.Fatalf("retries off: err %v, want ErrConn", err)
			}
			if p.Counters().RetriesSent != n {
				t.Fatalf("retry sent while disabled")
			}
		})
	}
}

// A 5xx or a 429 is retried on another node (RetryOn 5xx and 429, the
// default; a 429 is not a failure of the node); another 4xx is final;
// without 5xx (429) in RetryOn the 5xx (429) comes back.
func TestPoolStatusRetries(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		retryOn   []string
		wantCode  int
		wantBHits int64
	}{
		{"503 retried", 503, nil, 200, 1},
		{"500 retried", 500, nil, 200, 1},
		{"404 final", 404, nil, 404, 0},
		{"429 retried", 429, nil, 200, 1},
		{"503 not in retry_on", 503, []string{RetryOnConnect}, 503, 0},
		{"429 not in retry_on", 429, []string{RetryOnConnect, RetryOnStatus, RetryOnTimeout}, 429, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			a, b := newTestNode(t), newTestNode(t)
			a.status.Store(int64(tt.status))
			p := newPool(t, Config{Nodes: []string{a.srv.URL, b.srv.URL}, RetryOn: tt.retryOn, RetryBudget: RetryBudgetConfig{MinPerSecond: 10}}, first)
			resp, err := p.Do(context.Background(), http.MethodPost, "/work", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || b.hits.Load() != tt.wantBHits || p.Counters().RetriesSent != uint64(tt.wantBHits) {
				t.Fatalf("status %d (want %d), b hits %d (want %d), counters %+v", resp.StatusCode, tt.wantCode, b.hits.Load(), tt.wantBHits, p.Counters())
			}
			wantFail := uint64(0)
			if tt.status >= 500 {
				wantFail = 1
			}
			if st := p.Stats(); st[0].Failures != wantFail || st[0].Inflight != 0 || st[1].Inflight != 0 {
				t.Fatalf("stats %+v, want %d failure on a and nothing outstanding", st, wantFail)
			}
		})
	}
}

// Every node full: a 429 is tried once on each node (the budget allows)
// and the last 429 comes back; no node counts a failure.
func TestPoolRefusedEverywhere(t *testing.T) {
	checkGoroutines(t)
	nodes := []*testNode{newTestNode(t), newTestNode(t), newTestNode(t)}
	var urls []string
	for _, n := range nodes {
		n.status.Store(http.StatusTooManyRequests)
		urls = append(urls, n.srv.URL)
	}
	p := newPool(t, Config{Nodes: urls, RetryBudget: RetryBudgetConfig{MinPerSecond: 10}}, first)
	resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: HighestPriority})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || p.Counters().RetriesSent != 2 {
		t.Fatalf("status %d (want 429), counters %+v (want 2 retries)", resp.StatusCode, p.Counters())
	}
	for i, n := range nodes {
		if n.hits.Load() != 1 {
			t.Errorf("node %d: %d hits, want 1", i, n.hits.Load())
		}
	}
	for _, st := range p.Stats() {
		if st.Failures != 0 || st.Inflight != 0 {
			t.Fatalf("stats %+v: want no failure and nothing outstanding", st)
		}
	}
}

// A storm of connection failures on every node: the budget allows exactly
// one P0 retry per ten requests (Ratio 0.1, no reserve, time frozen), and
// half of that to P2 (P0Reserve 0.5). Retries never amplify the storm.
func TestPoolRetryBudgetStorm(t *testing.T) {
	for _, tt := range []struct {
		priority int
		want     uint64
	}{{0, 100}, {1, 50}, {2, 50}} {
		t.Run(fmt.Sprintf("P%d", tt.priority), func(t *testing.T) {
			checkGoroutines(t)
			p := newPool(t, Config{Nodes: deadURLs(t, 3)}, WithClock(newFakeClock()))
			p.SetBreakerEnabled(false)
			const n = 1000
			for range n {
				_, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Body: []byte("x"), Priority: tt.priority})
				if !errors.Is(err, ErrConn) {
					t.Fatalf("err %v, want ErrConn", err)
				}
			}
			c := p.Counters()
			// Each granted retry also fails and asks for a second one on the
			// third node; sent stays within the budget.
			if c.RetriesSent != tt.want {
				t.Fatalf("retries sent %d, want exactly %d of %d requests", c.RetriesSent, tt.want, n)
			}
			if c.RetriesSent+c.RetriesDenied < n {
				t.Fatalf("sent+denied = %d, want ≥ %d (every request asked)", c.RetriesSent+c.RetriesDenied, n)
			}
			var attempts uint64
			for _, s := range p.Stats() {
				attempts += s.Requests
				if s.Inflight != 0 || s.Failures != s.Requests {
					t.Fatalf("node %+v: want inflight 0 and every attempt failed", s)
				}
			}
			if attempts != n+c.RetriesSent || c.Attempts != attempts {
				t.Fatalf("attempts %d (counted %d), want requests+retries = %d", attempts, c.Attempts, n+c.RetriesSent)
			}
		})
	}
}

func TestPoolBreaker(t *testing.T) {
	checkGoroutines(t)
	clk := newFakeClock()
	a := newTestNode(t)
	a.status.Store(500)
	p := newPool(t, Config{
		Nodes:   []string{a.srv.URL},
		Breaker: BreakerConfig{FailureRatio: 0.5, MinRequests: 5, Window: 10 * time.Second, OpenFor: 3 * time.Second, HalfOpenProbes: 2},
	}, WithClock(clk))
	do := func() (int, error) {
		resp, err := p.Do(context.Background(), http.MethodGet, "/work", nil, nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for i := range 5 {
		if s, err := do(); err != nil || s != 500 {
			t.Fatalf("call %d: %d %v", i, s, err)
		}
	}
	if st := p.Stats()[0].Breaker; st != "open" {
		t.Fatalf("after 5 × 500: breaker %q, want open", st)
	}
	_, err := do()
	if !errors.Is(err, ErrNoNode) || !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("open breaker: err %v, want ErrNoNode and ErrBreakerOpen", err)
	}
	if a.hits.Load() != 5 || p.Counters().NoNode != 1 {
		t.Fatalf("hits %d (want 5), counters %+v", a.hits.Load(), p.Counters())
	}
	assertMetric(t, p, "levee_upstream_breaker_state", 2)

	clk.Advance(3 * time.Second)
	if st := p.Stats()[0].Breaker; st != "half_open" {
		t.Fatalf("after OpenFor: breaker %q, want half_open", st)
	}
	assertMetric(t, p, "levee_upstream_breaker_state", 1)
	// A failed probe reopens it.
	if s, err := do(); err != nil || s != 500 {
		t.Fatalf("probe: %d %v", s, err)
	}
	if st := p.Stats()[0].Breaker; st != "open" {
		t.Fatalf("failed probe: breaker %q, want open", st)
	}
	clk.Advance(3 * time.Second)
	a.status.Store(0)
	for range 2 {
		if s, err := do(); err != nil || s != 200 {
			t.Fatalf("probe: %d %v", s, err)
		}
	}
	if st := p.Stats()[0].Breaker; st != "closed" {
		t.Fatalf("after good probes: breaker %q, want closed", st)
	}

	// Disabled breakers never refuse, and reset to closed.
	a.status.Store(500)
	for range 5 {
		do()
	}
	if st := p.Stats()[0].Breaker; st != "open" {
		t.Fatalf("breaker %q, want open", st)
	}
	p.SetBreakerEnabled(false)
	if st := p.Stats()[0].Breaker; st != "closed" {
		t.Fatalf("disabled: breaker %q, want closed", st)
	}
	for range 10 {
		if _, err := do(); err != nil {
			t.Fatalf("breaker off: %v", err)
		}
	}
}

func assertMetric(t *testing.T, p *Pool, name string, want float64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range p.Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			if got := mf.GetMetric()[0].GetGauge().GetValue(); got != want {
				t.Fatalf("%s = %v, want %v", name, got, want)
			}
			return
		}
	}
	t.Fatalf("%s not gathered", name)
}

func TestPoolHealthChecks(t *testing.T) {
	checkGoroutines(t)
	a, b := newTestNode(t), newTestNode(t)
	p := newPool(t, Config{Nodes: []string{a.srv.URL, b.srv.URL}, HealthInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	up := func(i int) bool { return p.Stats()[i].Up }
	a.healthy.Store(false)
	eventually(t, "a marked down", func() bool { return !up(0) })
	for range 10 {
		doOK(t, p, "/work")
	}
	if a.hits.Load() != 0 || b.hits.Load() != 10 {
		t.Fatalf("down node got traffic: a=%d b=%d", a.hits.Load(), b.hits.Load())
	}
	b.srv.Close() // a dead process: no answer at all
	eventually(t, "b marked down", func() bool { return !up(1) })
	if _, err := p.Do(context.Background(), http.MethodGet, "/work", nil, nil); !errors.Is(err, ErrNoNode) || errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("all down: err %v, want ErrNoNode only", err)
	}
	a.healthy.Store(true)
	eventually(t, "a back up", func() bool { return up(0) })
	doOK(t, p, "/work")
	if up(1) {
		t.Fatalf("closed server reported up")
	}
}

func TestPoolRunStopsOnClose(t *testing.T) {
	checkGoroutines(t)
	a := newTestNode(t)
	p, err := New(Config{Nodes: []string{a.srv.URL}, HealthInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { p.Run(context.Background()); close(done) }()
	// Run is in its loop once its checks come one after another.
	eventually(t, "Run's health checks", func() bool { return a.checks.Load() >= 2 })
	p.Close()
	p.Close() // idempotent
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Close")
	}
}

func TestPoolDeadlinePropagation(t *testing.T) {
	checkGoroutines(t)
	a := newTestNode(t)
	p := newPool(t, Config{Nodes: []string{a.srv.URL}, MinServiceTime: 100 * time.Millisecond})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// A stale header from the caller is replaced, never forwarded.
	h := http.Header{DeadlineHeader: {"999999"}, "X-Other": {"kept"}}
	resp, err := p.Do(ctx, http.MethodPost, "/work", nil, h)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ms, err := strconv.Atoi(a.lastDL.Load().(string))
	if err != nil {
		t.Fatalf("deadline header %q: %v", a.lastDL.Load(), err)
	}
	if ms > 2000 || ms < 1000 { // 1 s of slop for a loaded machine
		t.Fatalf("deadline header %d ms, want ≈2000", ms)
	}
	if h.Get(DeadlineHeader) != "999999" {
		t.Fatalf("caller's header map was modified")
	}

	// No deadline: no header.
	resp, err = p.Do(context.Background(), http.MethodPost, "/work", nil, h)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := a.lastDL.Load(); got != "<none>" {
		t.Fatalf("no deadline, header %q", got)
	}

	// Remaining below MinServiceTime, or already past: no call.
	hits := a.hits.Load()
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := p.Do(short, http.MethodPost, "/work", nil, nil); !errors.Is(err, ErrDeadline) {
		t.Fatalf("short deadline: err %v, want ErrDeadline", err)
	}
	past, cancel3 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel3()
	if _, err := p.Do(past, http.MethodPost, "/work", nil, nil); !errors.Is(err, ErrDeadline) {
		t.Fatalf("past deadline: err %v, want ErrDeadline", err)
	}
	if a.hits.Load() != hits || p.Counters().DeadlineSkips != 2 {
		t.Fatalf("calls made despite deadline: hits %d→%d, counters %+v", hits, a.hits.Load(), p.Counters())
	}
}

// A caller that gives up mid-call: no retry, no breaker failure, and the
// outstanding count is released.
func TestPoolCallerCancel(t *testing.T) {
	checkGoroutines(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	b := newTestNode(t)
	p := newPool(t, Config{Nodes: []string{slow.URL, b.srv.URL}, RetryBudget: RetryBudgetConfig{MinPerSecond: 10}}, first)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := p.Do(ctx, http.MethodGet, "/work", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
	st := p.Stats()
	if b.hits.Load() != 0 || p.Counters().RetriesSent != 0 || st[0].Failures != 0 || st[0].Inflight != 0 {
		t.Fatalf("after cancel: b hits %d, counters %+v, stats %+v", b.hits.Load(), p.Counters(), st[0])
	}
}

func TestPoolBadPath(t *testing.T) {
	a := newTestNode(t)
	p := newPool(t, Config{Nodes: []string{a.srv.URL}})
	for _, path := range []string{"", "work", "http://elsewhere/x"} {
		if _, err := p.Do(context.Background(), http.MethodGet, path, nil, nil); err == nil || !strings.Contains(err.Error(), "must start with /") {
			t.Errorf("path %q: err %v", path, err)
		}
	}
	if _, err := p.Do(context.Background(), "BAD METHOD", "/work", nil, nil); err == nil {
		t.Errorf("bad method accepted")
	}
	if a.hits.Load() != 0 || p.Stats()[0].Inflight != 0 {
		t.Fatalf("bad input reached the node or leaked inflight: %+v", p.Stats()[0])
	}
}

func TestPoolMetrics(t *testing.T) {
	checkGoroutines(t)
	a := newTestNode(t)
	p := newPool(t, Config{Nodes: []string{deadURL(t), a.srv.URL}, RetryBudget: RetryBudgetConfig{MinPerSecond: 1}}, first)
	doOK(t, p, "/work")
	reg := prometheus.NewPedanticRegistry()
	for _, c := range p.Collectors() {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetMetric()
	}
	for _, name := range []string{"levee_upstream_up", "levee_upstream_inflight", "levee_upstream_breaker_state"} {
		if len(got[name]) != 2 {
			t.Fatalf("%s: %d series, want 2 (one per node)", name, len(got[name]))
		}
	}
	if h := got["levee_upstream_latency_seconds"]; len(h) != 1 || h[0].GetHistogram().GetSampleCount() != 1 {
		t.Fatalf("latency histogram: %v", h)
	}
	retries := map[string]float64{}
	for _, m := range got["levee_retries_total"] {
		retries[labelString(m)] = m.GetCounter().GetValue()
	}
	if len(retries) != 6 || retries["priority=P2,result=sent"] != 1 || retries["priority=P2,result=denied"] != 0 {
		t.Fatalf("levee_retries_total = %v, want P2 sent 1 denied 0", retries)
	}
	attempts := map[string]float64{}
	for _, m := range got["levee_upstream_attempts_total"] {
		attempts[labelString(m)] = m.GetCounter().GetValue()
	}
	if attempts["kind=first"] != 1 || attempts["kind=retry"] != 1 || attempts["kind=hedge"] != 0 {
		t.Fatalf("levee_upstream_attempts_total = %v, want first 1 retry 1 hedge 0", attempts)
	}
	for _, name := range []string{"levee_upstream_ejection_state", "levee_upstream_attempt_failures_total", "levee_upstream_ejections_total", "levee_upstream_hedges_total"} {
		if len(got[name]) == 0 {
			t.Fatalf("%s not gathered", name)
		}
	}
	if ts := got["levee_upstream_attempt_timeout_seconds"]; len(ts) != 1 || labelString(ts[0]) != "call_class=default,node="+strings.TrimPrefix(a.srv.URL, "") {
		t.Fatalf("attempt timeout gauges: %v (want one, for the node that answered)", ts)
	}
	for _, m := range got["levee_upstream_up"] {
		if m.GetGauge().GetValue() != 1 {
			t.Fatalf("up = %v before any health check", m)
		}
	}
}

// Concurrent callers, one node resetting every connection: every call is
// accounted for exactly and retries stay within the budget.
func TestPoolConcurrentAccounting(t *testing.T) {
	checkGoroutines(t)
	badURL, badHits := resetNode(t)
	good := newTestNode(t)
	p := newPool(t, Config{
		Nodes:       []string{badURL, good.srv.URL},
		RetryBudget: RetryBudgetConfig{Ratio: 0.1, MinPerSecond: 0},
	}, WithClock(newFakeClock()))
	p.SetBreakerEnabled(false) // keep sending to the bad node
	const workers, each = 8, 60
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				resp, err := p.Do(context.Background(), http.MethodPost, "/work", []byte("x"), nil)
				if err != nil {
					if !errors.Is(err, ErrConn) {
						t.Errorf("err %v, want ErrConn", err)
					}
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	const n = workers * each
	c := p.Counters()
	st := p.Stats()
	if ok.Load()+failed.Load() != n {
		t.Fatalf("ok %d + failed %d != %d", ok.Load(), failed.Load(), n)
	}
	// Every call that hit the bad node first either was retried (and then
	// succeeded on the good one) or failed with the budget denying it.
	if uint64(failed.Load()) != c.RetriesDenied || int64(st[0].Requests) != badHits.Load() ||
		st[0].Requests != c.RetriesSent+c.RetriesDenied || uint64(good.hits.Load()) != st[1].Requests ||
		uint64(ok.Load()) != st[1].Requests {
		t.Fatalf("accounting: ok %d failed %d counters %+v stats %+v bad hits %d good hits %d",
			ok.Load(), failed.Load(), c, st, badHits.Load(), good.hits.Load())
	}
	if c.RetriesSent > n/10 {
		t.Fatalf("retries %d exceed 10%% of %d requests", c.RetriesSent, n)
	}
	if c.RetriesSent == 0 || st[0].Inflight != 0 || st[1].Inflight != 0 {
		t.Fatalf("counters %+v stats %+v", c, st)
	}
	t.Logf("%d calls: bad node first %d, retries sent %d denied %d", n, st[0].Requests, c.RetriesSent, c.RetriesDenied)
}

// TestHealthHysteresis drives single check rounds: failed checks take a node
// down only after UnhealthyThreshold in a row, a refused connection at once,
// one good check brings it back.
func TestHealthHysteresis(t *testing.T) {
	a := newTestNode(t)
	dead := deadURL(t)
	p := newPool(t, Config{Nodes: []string{a.srv.URL, dead}, UnhealthyThreshold: 3})
	ctx := context.Background()
	up := func(i int) bool { return p.Stats()[i].Up }

	p.checkAll(ctx)
	if !up(0) || up(1) {
		t.Fatalf("after one round: a up=%v (want true), dead up=%v (want false: refused)", up(0), up(1))
	}
	a.healthy.Store(false)
	for round := 1; round <= 3; round++ {
		p.checkAll(ctx)
		if want := round < 3; up(0) != want {
			t.Fatalf("after %d failed checks: up=%v, want %v", round, up(0), want)
		}
	}
	a.healthy.Store(true)
	p.checkAll(ctx)
	if !up(0) {
		t.Fatal("one good check did not bring the node back")
	}
	a.healthy.Store(false)
	p.checkAll(ctx)
	if !up(0) {
		t.Fatal("the failure count was not reset by the good check")
	}
}

// labelString renders a metric's labels as "a=x,b=y" in name order.
func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

// Many callers of every priority against a node that hangs on a third of
// its calls and one that fails a third, with real timers: attempt
// timeouts, hedges, retries and ejections all happen at once. Whatever
// the timing, every call ends, nothing stays outstanding, every attempt
// is counted once, and retries and hedges stay within their budgets.
func TestPoolConcurrentPartialFailures(t *testing.T) {
	checkGoroutines(t)
	hang, fail, good := newScriptNode(t, answerHangThird), newScriptNode(t, answer500Third), newScriptNode(t, answerOK)
	cfg := Config{
		Nodes:       []string{hang.srv.URL, fail.srv.URL, good.srv.URL},
		RetryBudget: RetryBudgetConfig{Ratio: 0.1, MinPerSecond: 1},
		Hedge:       HedgeConfig{Ratio: 0.1, MinPerSecond: 1},
	}
	p, err := New(cfg) // real clock and timers
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const workers, each = 8, 40
	var ok, answered5xx, failed, p0 atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				prio := (w + i) % 3
				if prio == 0 {
					p0.Add(1)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				resp, err := p.Send(ctx, Call{Method: http.MethodPost, Path: "/work", Body: []byte("x"), Priority: prio, Class: "work"})
				cancel()
				switch {
				case err != nil:
					failed.Add(1)
				case resp.StatusCode == 200:
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ok.Add(1)
				default:
					resp.Body.Close()
					answered5xx.Add(1)
				}
			}
		})
	}
	wg.Wait()
	const n = workers * each
	c := p.Counters()
	if ok.Load()+answered5xx.Load()+failed.Load() != n {
		t.Fatalf("ok %d + 5xx %d + failed %d != %d", ok.Load(), answered5xx.Load(), failed.Load(), n)
	}
	var requests uint64
	for _, s := range p.Stats() {
		requests += s.Requests
		if s.Inflight != 0 {
			t.Fatalf("%s: %d outstanding after every call ended", s.Addr, s.Inflight)
		}
	}
	first := p.attempts[kindFirst].Load()
	if c.Attempts != requests || c.Attempts != first+c.RetriesSent+c.HedgesSent || first != n {
		t.Fatalf("attempts %d, node requests %d, first %d + retries %d + hedges %d (calls %d)", c.Attempts, requests, first, c.RetriesSent, c.HedgesSent, n)
	}
	// Budgets: the clock runs for seconds here, well within the 10 s TTL,
	// so every deposit is still counted.
	if limit := uint64(0.1*n) + 10; c.RetriesSent > limit {
		t.Fatalf("retries %d above the budget's %d", c.RetriesSent, limit)
	}
	if limit := uint64(0.1*float64(p0.Load())) + 10; c.HedgesSent > limit {
		t.Fatalf("hedges %d above the budget's %d", c.HedgesSent, limit)
	}
	if c.HedgesWon > c.HedgesSent {
		t.Fatalf("hedges won %d > sent %d", c.HedgesWon, c.HedgesSent)
	}
	t.Logf("%d calls: ok %d, 5xx %d, failed %d; attempts %d (retries %d, hedges %d won %d); timeouts %d; states %v",
		n, ok.Load(), answered5xx.Load(), failed.Load(), c.Attempts, c.RetriesSent, c.HedgesSent, c.HedgesWon, p.Stats()[0].Timeouts, states(p))
}

// sendResult is what a call sent by sendInBackground came to: its
// answer's body, read to the end, or Send's error.
type sendResult struct {
	body string
	err  error
}

// sendInBackground sends c through p on its own goroutine; the channel
// gets the result once.
func sendInBackground(p *Pool, c Call) <-chan sendResult {
	done := make(chan sendResult, 1)
	go func() {
		resp, err := p.Send(context.Background(), c)
		if err != nil {
			done <- sendResult{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- sendResult{body: string(b)}
	}()
	return done
}
