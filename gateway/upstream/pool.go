package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// DeadlineHeader carries the caller's remaining time, in whole
// milliseconds, to the node.
const DeadlineHeader = wire.HeaderDeadlineMs

// node is one model node. Its counters are atomics; breaker has its own lock.
type node struct {
	addr string // base URL without trailing slash
	up   atomic.Bool
	// healthFails counts checks failed in a row; only the health loop
	// (one goroutine per node per round, rounds never overlap) touches it.
	healthFails int
	inflight    atomic.Int64
	requests    atomic.Uint64
	failures    atomic.Uint64
	breaker     *Breaker
}

// NodeStats is a snapshot of one node.
type NodeStats struct {
	Addr     string `json:"addr"`
	Up       bool   `json:"up"`
	Breaker  string `json:"breaker"` // "closed", "half_open", "open"
	Inflight int64  `json:"inflight"`
	Requests uint64 `json:"requests"` // attempts sent to the node
	Failures uint64 `json:"failures"` // connection failures and 5xx
}

// Counters are the pool's totals since New.
type Counters struct {
	RetriesSent   uint64 `json:"retries_sent"`
	RetriesDenied uint64 `json:"retries_denied"` // by the retry budget
	DeadlineSkips uint64 `json:"deadline_skips"` // calls not made: deadline too short
	NoNode        uint64 `json:"no_node"`        // calls not made: no node admitted
}

// Pool sends requests to a set of model nodes; see Do. It is safe for
// concurrent use.
type Pool struct {
	cfg    Config
	nodes  []*node
	rt     http.RoundTripper
	clock  Clock
	log    *slog.Logger
	bal    Balancer
	budget *RetryBudget

	breakerOn atomic.Bool
	retryOn   atomic.Bool

	retriesSent   atomic.Uint64
	retriesDenied atomic.Uint64
	deadlineSkips atomic.Uint64
	noNode        atomic.Uint64

	latency prometheus.Histogram

	closeOnce sync.Once
	done      chan struct{} // closed by Close; stops Run
}

// New validates cfg, applies defaults and returns a pool with every node
// marked up and every breaker closed. Active health checks start with Run.
func New(cfg Config, opts ...Option) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	p := &Pool{cfg: cfg, done: make(chan struct{})}
	for _, o := range opts {
		o(p)
	}
	if p.clock == nil {
		p.clock = realClock{}
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.bal == nil {
		p.bal = &LeastOutstanding{}
	}
	if p.rt == nil {
		p.rt = NewTransport(cfg)
	}
	p.budget = NewRetryBudget(cfg.RetryBudget, p.clock)
	p.breakerOn.Store(true)
	p.retryOn.Store(true)
	p.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    wire.MetricUpstreamLatency,
		Help:    "Time from sending a request to a model node to its response headers.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	for _, a := range cfg.Nodes {
		n := &node{addr: strings.TrimRight(a, "/"), breaker: NewBreaker(cfg.Breaker, p.clock)}
		n.up.Store(true)
		addr := n.addr
		n.breaker.onChange = func(from, to BreakerState) {
			p.log.Info("upstream breaker", "node", addr, "from", from.String(), "to", to.String())
		}
		p.nodes = append(p.nodes, n)
	}
	return p, nil
}

// SetBreakerEnabled turns the per-node breakers on or off. Turning them off
// resets every breaker to closed; while off, outcomes are not recorded.
func (p *Pool) SetBreakerEnabled(on bool) {
	p.breakerOn.Store(on)
	if !on {
		for _, n := range p.nodes {
			n.breaker.Reset()
		}
	}
}

// SetRetryEnabled turns retries on or off. Requests still deposit into the
// retry budget while retries are off.
func (p *Pool) SetRetryEnabled(on bool) { p.retryOn.Store(on) }

// Stats returns a snapshot of every node, in config order.
func (p *Pool) Stats() []NodeStats {
	out := make([]NodeStats, len(p.nodes))
	for i, n := range p.nodes {
		out[i] = NodeStats{
			Addr:     n.addr,
			Up:       n.up.Load(),
			Breaker:  n.breaker.State().String(),
			Inflight: n.inflight.Load(),
			Requests: n.requests.Load(),
			Failures: n.failures.Load(),
		}
	}
	return out
}

// Counters returns the pool's totals.
func (p *Pool) Counters() Counters {
	return Counters{
		RetriesSent:   p.retriesSent.Load(),
		RetriesDenied: p.retriesDenied.Load(),
		DeadlineSkips: p.deadlineSkips.Load(),
		NoNode:        p.noNode.Load(),
	}
}

// Close stops Run and closes idle connections. Responses already returned
// stay readable. Close is idempotent.
func (p *Pool) Close() {
	p.closeOnce.Do(func() {
		close(p.done)
		if ci, ok := p.rt.(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	})
}

// pick chooses an eligible node not in tried and, with breakers on, gets
// its breaker's admission. The chosen node's outstanding count is already
// raised (so concurrent picks see it); undo with release if it is not used.
// It returns nil and the reason when no node is left.
func (p *Pool) pick(tried []*node) (*node, uint64, error) {
	var candBuf [16]*node
	var loadBuf [16]int64
	cand, loads := candBuf[:0], loadBuf[:0]
	breakerOn := p.breakerOn.Load()
	anyUp := false
	for _, n := range p.nodes {
		if !n.up.Load() || contains(tried, n) {
			continue
		}
		anyUp = true
		if breakerOn && n.breaker.State() == StateOpen {
			continue
		}
		cand = append(cand, n)
		loads = append(loads, n.inflight.Load())
	}
	for len(cand) > 0 {
		i := p.bal.Pick(loads)
		if i < 0 || i >= len(cand) {
			return nil, 0, fmt.Errorf("upstream: balancer picked %d of %d nodes", i, len(cand))
		}
		n := cand[i]
		if !breakerOn {
			n.inflight.Add(1)
			return n, 0, nil
		}
		if gen, ok := n.breaker.Allow(); ok {
			n.inflight.Add(1)
			return n, gen, nil
		}
		// Half-open with all probes out (or just reopened): drop and repick.
		cand = append(cand[:i], cand[i+1:]...)
		loads = append(loads[:i], loads[i+1:]...)
	}
	if anyUp {
		return nil, 0, fmt.Errorf("%w: %w", ErrNoNode, ErrBreakerOpen)
	}
	return nil, 0, ErrNoNode
}

func contains(ns []*node, n *node) bool {
	for _, x := range ns {
		if x == n {
			return true
		}
	}
	return false
}

// Do sends one request to the healthy node with the fewest outstanding
// requests whose breaker admits it, and returns its response (any status;
// HTTP error statuses are not errors and are never retried).
//
// body is a byte slice so a retry can resend it; header is copied, never
// modified. When ctx has a deadline, the remaining time is sent as
// X-Levee-Deadline-Ms (whole milliseconds); when it is below MinServiceTime
// no call is made and the error is ErrDeadline.
//
// A call that fails at the connection level (dial refused, reset, EOF before
// response headers) is retried once per other eligible node while the retry
// budget allows; the error then wraps ErrConn. Failures caused by ctx are
// not retried. Errors: ErrDeadline, ErrNoNode (also ErrBreakerOpen when
// breakers are to blame), ErrConn, or ctx's error.
//
// The node counts the request as outstanding until the returned response's
// body is closed; the caller must close it.
func (p *Pool) Do(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Response, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("upstream: path %q must start with /", path)
	}
	p.budget.Deposit()
	var tried []*node
	var lastErr error
	for attempt := 0; ; attempt++ {
		var remaining time.Duration
		deadline, hasDeadline := ctx.Deadline()
		if hasDeadline {
			remaining = time.Until(deadline)
			if remaining <= 0 || remaining < p.cfg.MinServiceTime {
				p.deadlineSkips.Add(1)
				if lastErr != nil {
					return nil, fmt.Errorf("%w (after %w)", ErrDeadline, lastErr)
				}
				return nil, ErrDeadline
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, gen, err := p.pick(tried)
		if err != nil {
			if attempt > 0 {
				return nil, lastErr // no other node to retry on
			}
			p.noNode.Add(1)
			return nil, err
		}
		if attempt > 0 {
			if !p.budget.TryWithdraw() {
				p.retriesDenied.Add(1)
				p.release(n, gen) // admission not used
				return nil, lastErr
			}
			p.retriesSent.Add(1)
		}
		tried = append(tried, n)
		resp, err := p.send(ctx, n, gen, method, path, body, header, hasDeadline, remaining)
		if err == nil {
			return resp, nil
		}
		lastErr = err
		if ctx.Err() != nil || !p.retryOn.Load() || !isConnErr(err) {
			return nil, err
		}
	}
}

// release undoes a pick that was not used for a call: the outstanding count
// and the breaker admission.
func (p *Pool) release(n *node, gen uint64) {
	n.inflight.Add(-1)
	if p.breakerOn.Load() {
		// No outcome is recorded; a half-open probe slot is freed.
		n.breaker.unadmit(gen)
	}
}

func isConnErr(err error) bool { return err != nil && errors.Is(err, ErrConn) }

// send makes one attempt on n.
func (p *Pool) send(ctx context.Context, n *node, gen uint64, method, path string, body []byte, header http.Header, hasDeadline bool, remaining time.Duration) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.addr+path, rd)
	if err != nil {
		p.release(n, gen)
		return nil, fmt.Errorf("upstream: building request for %s%s: %w", n.addr, path, err)
	}
	if header != nil {
		req.Header = header.Clone()
	}
	if hasDeadline {
		// Recompute: time passed since the check above.
		if d, ok := ctx.Deadline(); ok {
			remaining = time.Until(d)
		}
		req.Header.Set(DeadlineHeader, strconv.FormatInt(max(0, remaining.Milliseconds()), 10))
	} else {
		req.Header.Del(DeadlineHeader)
	}
	n.requests.Add(1)
	start := time.Now()
	resp, err := p.rt.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up: says nothing about the node.
			p.release(n, gen)
			return nil, fmt.Errorf("upstream %s: %w", n.addr, ctx.Err())
		}
		n.inflight.Add(-1)
		n.failures.Add(1)
		p.record(n, gen, true)
		return nil, fmt.Errorf("%w: %s: %w", ErrConn, n.addr, err)
	}
	p.latency.Observe(time.Since(start).Seconds())
	failed := resp.StatusCode >= 500
	if failed {
		n.failures.Add(1)
	}
	p.record(n, gen, failed)
	resp.Body = &trackedBody{ReadCloser: resp.Body, n: n}
	return resp, nil
}

func (p *Pool) record(n *node, gen uint64, failed bool) {
	if p.breakerOn.Load() {
		n.breaker.Record(gen, failed)
	}
}

// trackedBody holds the node's outstanding count until Close.
type trackedBody struct {
	io.ReadCloser
	n    *node
	once sync.Once
}

func (b *trackedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.n.inflight.Add(-1) })
	return err
}
