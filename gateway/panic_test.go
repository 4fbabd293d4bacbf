package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/upstream"
	"github.com/levee-lab/levee/internal/syncbuf"
	"github.com/levee-lab/levee/internal/wire"
)

// panicTransport is a real HTTP transport that, once armed, wraps the
// body of its next answer to path with wrap: a body whose reader panics,
// a bug met by whichever goroutine reads it.
type panicTransport struct {
	rt    http.RoundTripper
	path  string
	wrap  func(io.ReadCloser) io.ReadCloser
	armed atomic.Bool
}

func (p *panicTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.rt.RoundTrip(req)
	if err == nil && req.URL.Path == p.path && p.armed.CompareAndSwap(true, false) {
		resp.Body = p.wrap(resp.Body)
	}
	return resp, err
}

// panicBody panics on its first read: met in the attempt's own goroutine.
type panicBody struct{ io.ReadCloser }

func (panicBody) Read([]byte) (int, error) { panic("test: body reader panics") }

// TestAttemptPanicIsContained: a panic in an upstream attempt's goroutine
// (its answer's body reader panics) fails that request once, as an
// upstream error (502), logged with its stack once and counted in
// levee_upstream_attempt_panics_total; the node is not blamed and holds
// nothing afterwards, and the gateway goes on serving. Before the fix the
// panic ended the process (here: the test binary).
func TestAttemptPanicIsContained(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	cfg := testConfig(fm.addr())
	pt := &panicTransport{rt: http.DefaultTransport.(*http.Transport).Clone(), path: wire.PathPredict,
		wrap: func(b io.ReadCloser) io.ReadCloser { return panicBody{b} }}
	var logs syncbuf.Buffer
	s := startServer(t, cfg, WithUpstreamOptions(upstream.WithTransport(pt)),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	admin(t, s, "PUT", "/admin/defenses", `{"fallback":false}`)

	pt.armed.Store(true)
	a := call(t, "POST", "http://"+s.Addr()+wire.PathPredict, "k1", predictBody)
	if a.err != nil || a.status != http.StatusBadGateway || a.errorCode() != wire.CodeUpstreamError {
		t.Fatalf("call whose attempt panicked: %v; want 502 %s", a, wire.CodeUpstreamError)
	}
	if !strings.Contains(string(a.body), "attempt panicked") {
		t.Errorf("answer does not say the attempt panicked: %s", a.body)
	}
	eventually(t, 10*time.Second, func() bool {
		return counterSum(scrape(t, s), wire.MetricRequests, map[string]string{"route": "predict"}) == 1
	}, "the request to be counted")
	fams := scrape(t, s)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{wire.MetricRequests, map[string]string{"route": "predict", "outcome": "error"}, 1},
		{wire.MetricUpstreamAttemptPanics, nil, 1},
		{wire.MetricUpstreamAttemptFailures, nil, 0}, // not the node's failure
		{wire.MetricUpstreamBreakerState, nil, 0},
		{wire.MetricUpstreamInflight, nil, 0},
		{wire.MetricUpstreamAttempts, map[string]string{"kind": "retry"}, 0},
	} {
		if got := counterSum(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := strings.Count(logs.String(), "upstream: attempt panicked"); n != 1 {
		t.Errorf("panic logged %d times, want once; log:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "panic_test.go") {
		t.Errorf("the panic's log carries no stack; log:\n%s", logs.String())
	}

	// The gateway lives on and the node serves the next call.
	if a := call(t, "POST", "http://"+s.Addr()+wire.PathPredict, "k1", predictBody); a.status != http.StatusOK {
		t.Fatalf("call after the panic: %v; want 200", a)
	}
	eventually(t, 10*time.Second, func() bool {
		return counterSum(scrape(t, s), wire.MetricRequests, map[string]string{"route": "predict", "outcome": "ok"}) == 1
	}, "the next request to be counted ok")
	if got := counterSum(scrape(t, s), wire.MetricRequests, map[string]string{"route": "predict"}); got != 2 {
		t.Errorf("levee_requests_total{route=predict} = %v after two requests, want 2", got)
	}
}

// laterPanicBody gives its first byte and then panics on the next read:
// met by the gateway's own reader of the answer, past the attempt's
// first byte.
type laterPanicBody struct {
	io.ReadCloser
	reads int
}

func (b *laterPanicBody) Read(p []byte) (int, error) {
	b.reads++
	if b.reads > 1 {
		panic("test: body reader panics after the first byte")
	}
	return b.ReadCloser.Read(p[:1])
}

// TestAgentSubcallPanicLoggedWithStack: a panic while an agent sub-call
// reads its answer fails that sub-call only (counted error; the task is
// answered, degraded), and is logged once with its stack, as the pool's
// own panics are. Before the fix the log carried the panic's value alone.
func TestAgentSubcallPanicLoggedWithStack(t *testing.T) {
	fm := newFakeModel(t, 8, 0)
	cfg := testConfig(fm.addr())
	pt := &panicTransport{rt: http.DefaultTransport.(*http.Transport).Clone(), path: wire.PathChat,
		wrap: func(b io.ReadCloser) io.ReadCloser { return &laterPanicBody{ReadCloser: b} }}
	var logs syncbuf.Buffer
	s := startServer(t, cfg, WithUpstreamOptions(upstream.WithTransport(pt)),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	pt.armed.Store(true)
	a := call(t, "POST", "http://"+s.Addr()+wire.PathAgent, "k1", `{"prompt":"refund order 42","max_tokens":8,"steps":1}`)
	if v := parseAgent(t, a); a.status != http.StatusOK || !v.Degraded {
		t.Fatalf("agent task with one panicking sub-call: %v; want 200, degraded", a)
	}
	if got := counterSum(scrape(t, s), wire.MetricSubcalls, map[string]string{"result": wire.SubcallError}); got != 1 {
		t.Errorf("sub-calls counted error %v, want 1", got)
	}
	if n := strings.Count(logs.String(), "gateway: panic in agent sub-call"); n != 1 {
		t.Errorf("panic logged %d times, want once; log:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "panic_test.go") {
		t.Errorf("the sub-call's panic log carries no stack; log:\n%s", logs.String())
	}
}
