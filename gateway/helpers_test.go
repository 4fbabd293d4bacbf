package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// fakeModel is an in-test model node: slots concurrent services of a
// fixed latency, a FIFO queue in front of them (unbounded unless
// queueSize > 0, then 503 when full), and switches to fail.
type fakeModel struct {
	srv     *httptest.Server
	slots   chan struct{}
	latency atomic.Int64 // ns

	queueSize int
	queued    atomic.Int64

	status   atomic.Int32 // when non-zero, answer this status at once
	sick     atomic.Bool  // when set, /healthz answers 503
	arrivals atomic.Int64 // model calls received (predict + chat)
	inflight atomic.Int64 // arrived, not yet answered (in queue or slot)
	maxInfl  atomic.Int64

	// streamGate, when set, is received from before each SSE event after
	// the first: the test paces the stream.
	streamGate chan struct{}
	// hold, when set, keeps every call in its slot until the test closes
	// it (after the latency; a client that left does not end it early).
	hold   chan struct{}
	mu     sync.Mutex
	bodies []string // chat bodies received (guarded by mu)
}

func newFakeModel(t testing.TB, slots int, latency time.Duration) *fakeModel {
	f := &fakeModel{slots: make(chan struct{}, slots)}
	f.latency.Store(int64(latency))
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		if f.sick.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.arrivals.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInfl.Load()
		if n <= m || f.maxInfl.CompareAndSwap(m, n) {
			break
		}
	}
	if s := f.status.Load(); s != 0 {
		w.WriteHeader(int(s))
		_, _ = io.WriteString(w, `{"error":{"message":"injected"}}`)
		return
	}
	if f.queueSize > 0 && f.queued.Add(1) > int64(f.queueSize) {
		f.queued.Add(-1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	select { // FIFO enough: Go wakes channel senders in order
	case f.slots <- struct{}{}:
	case <-r.Context().Done():
		if f.queueSize > 0 {
			f.queued.Add(-1)
		}
		return
	}
	if f.queueSize > 0 {
		f.queued.Add(-1)
	}
	defer func() { <-f.slots }()
	time.Sleep(time.Duration(f.latency.Load())) // the model works on, even for a client that left
	if f.hold != nil {
		<-f.hold
	}
	switch r.URL.Path {
	case "/v1/predict":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"decision":"APPROVE","score":0.87}`)
	case "/v1/chat/completions":
		f.mu.Lock()
		f.bodies = append(f.bodies, string(body))
		f.mu.Unlock()
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				if i > 0 && f.streamGate != nil {
					<-f.streamGate
				}
				fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i)
				w.(http.Flusher).Flush()
			}
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"answer"},"finish_reason":"stop"}]}`)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

const testToken = "admin-secret-0123456789"

// testConfig is a config with fast guard loops in front of nodes.
func testConfig(nodes ...string) Config {
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Admin = "127.0.0.1:0"
	cfg.Upstream.Nodes = nodes
	cfg.Upstream.HealthInterval = 2 * time.Second // one failed check marks a node down: keep stalls of a shared machine from failing it
	cfg.Upstream.MinServiceTime = 5 * time.Millisecond
	cfg.Keys = []KeyConfig{
		{Key: "k0", Tenant: "trade", Priority: "P0"},
		{Key: "k1", Tenant: "web", Priority: "P1"},
		{Key: "k2", Tenant: "batch", Priority: "P2"},
	}
	cfg.Guard.Interval = 20 * time.Millisecond
	// Gateway-runtime watermarks off: tests drive the level through the
	// admin API or upstream signals, never through machine load.
	cfg.Guard.LagProbeP99Ms = Watermarks{}
	cfg.Guard.SchedLatencyP99Ms = Watermarks{}
	cfg.Guard.GCPauseP99Ms = Watermarks{}
	cfg.Guard.HeapMB = Watermarks{}
	cfg.DrainTimeout = 2 * time.Second
	return cfg
}

// startServer starts a gateway for the test and shuts it down after.
func startServer(t testing.TB, cfg Config, opts ...Option) *Server {
	t.Helper()
	s, err := Start(context.Background(), cfg, testToken, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

// answer is what a test client saw.
type answer struct {
	status  int
	outcome string
	header  http.Header
	body    []byte
	err     error
}

var testClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 512},
}

// call sends one request; key "" sends no Authorization.
func call(t testing.TB, method, url, key, body string, hdr ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, outcome: resp.Header.Get(wire.HeaderOutcome), header: resp.Header, body: b, err: err}
}

func (a answer) String() string {
	return fmt.Sprintf("status %d outcome %q err %v body %s", a.status, a.outcome, a.err, bytes.TrimSpace(a.body))
}

// errorField returns the JSON error's field.
func (a answer) errorField() string {
	var e wire.ErrorBody
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Field
}

// retryAfterOK reports whether a carries a Retry-After of whole seconds,
// at least 1 (RFC 9110 delay-seconds).
func retryAfterOK(a answer) bool {
	ra := a.header.Get("Retry-After")
	n, err := strconv.Atoi(ra)
	return err == nil && n >= 1 && strconv.Itoa(n) == ra
}

// errorCode returns the JSON error's code.
func (a answer) errorCode() string {
	var e wire.ErrorBody
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

// admin sends an admin request with the test token (or tok when given).
func admin(t testing.TB, s *Server, method, path, body string, tok ...string) answer {
	t.Helper()
	token := testToken
	if len(tok) > 0 {
		token = tok[0]
	}
	return call(t, method, "http://"+s.AdminAddr()+path, "", body, "Authorization", "Bearer "+token)
}

// scrape reads the gateway's /metrics.
func scrape(t testing.TB, s *Server) map[string]*dtoFamily {
	t.Helper()
	resp, err := testClient.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// counterSum sums a metric's samples whose labels include want.
func counterSum(fams map[string]*dtoFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

func eventually(t testing.TB, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type dtoFamily = dto.MetricFamily

const (
	predictBody = `{"features":{"amount":12.5,"country":"FR"}}`
	chatBody    = `{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":8}`
	streamBody  = `{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":8,"stream":true}`
	agentBody   = `{"prompt":"refund order 42","max_tokens":8}`
)

// panicStore is a rate-limit store that panics: a stand-in for any bug on
// the request path.
type panicStore struct{}

func (panicStore) Allow(context.Context, string, ratelimit.Rule, int64, time.Time) (ratelimit.Decision, error) {
	panic("injected store bug")
}
