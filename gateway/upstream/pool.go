package upstream

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// node is one model node. Its counters are atomics; breaker and stats
// have their own locks.
type node struct {
	addr string // base URL without trailing slash
	up   atomic.Bool
	// healthFails counts checks failed in a row; only the health loop
	// (one goroutine per node per round, rounds never overlap) touches it.
	healthFails int
	// healthErr is why the node's last health check failed, nil after
	// one passed.
	healthErr atomic.Pointer[string]
	inflight  atomic.Int64
	requests  atomic.Uint64
	failures  atomic.Uint64
	fails     [numFailureKinds]atomic.Uint64 // failed attempts by kind
	breaker   *Breaker
	ejection  atomic.Int32 // EjectionState; changed under outliers.mu
	stats     *nodeStats
}

// NodeStats is a snapshot of one node.
type NodeStats struct {
	Addr     string `json:"addr"`
	Up       bool   `json:"up"`
	Breaker  string `json:"breaker"`  // wire.Breaker…
	Ejection string `json:"ejection"` // wire.Ejection…
	Inflight int64  `json:"inflight"`
	Requests uint64 `json:"requests"` // attempts sent to the node
	Failures uint64 `json:"failures"` // connection failures, 5xx and attempt timeouts
	Timeouts uint64 `json:"timeouts"` // attempts abandoned by the attempt timeout
	// HealthError is why the node's last health check failed (the
	// status or the transport's error); empty once one passed.
	HealthError string `json:"health_error,omitempty"`
}

// Counters are the pool's totals since New.
type Counters struct {
	Attempts      uint64 `json:"attempts"`       // attempts sent: first, retries and hedges
	RetriesSent   uint64 `json:"retries_sent"`   // all priorities
	RetriesDenied uint64 `json:"retries_denied"` // by the retry budget
	HedgesSent    uint64 `json:"hedges_sent"`
	HedgesWon     uint64 `json:"hedges_won"`     // the hedge answered first
	HedgesDenied  uint64 `json:"hedges_denied"`  // by the hedge budget
	DeadlineSkips uint64 `json:"deadline_skips"` // calls not made: deadline too short
	NoNode        uint64 `json:"no_node"`        // calls not made: no node admitted
}

// Attempt kinds (levee_upstream_attempts_total{kind}).
type attemptKind int

const (
	kindFirst attemptKind = iota
	kindRetry
	kindHedge
	numKinds
)

var kindNames = [numKinds]string{wire.AttemptFirst, wire.AttemptRetry, wire.AttemptHedge}

// Pool sends requests to a set of model nodes; see Send. It is safe for
// concurrent use.
type Pool struct {
	cfg   Config
	nodes []*node
	rt    http.RoundTripper
	fresh http.RoundTripper // rt dialing a new connection each time (staleconn.go)
	// staleRetries counts calls sent again on a new connection after
	// their reused one turned out closed by the node.
	staleRetries atomic.Uint64
	// panics counts attempts whose goroutine panicked (see attempt.runSafe).
	panics atomic.Uint64
	// timerPanics counts timer callbacks that panicked (see runTimer);
	// timerHook, when set (tests only), runs first in every timer
	// callback with the timer's name.
	timerPanics atomic.Uint64
	timerHook   func(timer string)
	clock       Clock
	after       AfterFunc
	log         *slog.Logger
	bal         Balancer
	budget      *RetryBudget
	hedges      *RetryBudget
	outliers    *outliers
	retryOnKind [numFailureKinds]bool // which failures are retried (RetryOn)

	retryOnRefused bool // a 429 is retried (RetryOn)

	header http.Header // Config.Headers, canonical; read-only after New

	onRotation func(from, to int) // see WithRotationHook; nil: none
	rotMu      sync.Mutex         // serializes onRotation's calls
	rotation   int                // guarded by rotMu; nodes in rotation last reported

	breakerOn atomic.Bool
	retriesOn atomic.Bool

	attempts      [numKinds]atomic.Uint64
	retriesSent   [numPriorities]atomic.Uint64
	retriesDenied [numPriorities]atomic.Uint64
	hedgesSent    atomic.Uint64
	hedgesWon     atomic.Uint64
	hedgesDenied  atomic.Uint64
	deadlineSkips atomic.Uint64
	noNode        atomic.Uint64

	latency prometheus.Histogram

	closeOnce sync.Once
	done      chan struct{} // closed by Close; stops Run
}

// New validates cfg, applies defaults and returns a pool with every node
// marked up, in rotation, and every breaker closed. Active health checks
// start with Run.
func New(cfg Config, opts ...Option) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	p := &Pool{cfg: cfg, header: headerOf(cfg.Headers), done: make(chan struct{})}
	for _, o := range opts {
		o(p)
	}
	if p.after == nil {
		p.after = realAfterFunc
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
	p.fresh = freshTransport(p.rt)
	p.budget = NewRetryBudget(cfg.RetryBudget, p.clock)
	p.hedges = NewRetryBudget(RetryBudgetConfig{Ratio: cfg.Hedge.Ratio, MinPerSecond: cfg.Hedge.MinPerSecond, TTL: cfg.RetryBudget.TTL, Shared: true}, p.clock)
	for _, on := range cfg.RetryOn {
		switch on {
		case RetryOnConnect:
			p.retryOnKind[failConnect] = true
		case RetryOnStatus:
			p.retryOnKind[failStatus] = true
		case RetryOnTimeout:
			p.retryOnKind[failTimeout] = true
		case RetryOnRefused:
			p.retryOnRefused = true
		}
	}
	p.breakerOn.Store(true)
	p.retriesOn.Store(true)
	p.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    wire.MetricUpstreamLatency,
		Help:    "Time from sending an attempt to a model node to the first byte of its answer (of an SSE stream: of its first line that is not a comment).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	now := p.clock.Now()
	for _, a := range cfg.Nodes {
		n := &node{
			addr:    strings.TrimRight(a, "/"),
			breaker: NewBreaker(cfg.Breaker, p.clock),
			stats:   newNodeStats(cfg.Outlier.Window, cfg.LatencyWindow, now),
		}
		n.up.Store(true)
		addr := n.addr
		n.breaker.onChange = func(from, to BreakerState) {
			p.log.Info("upstream breaker", "node", addr, "from", from.String(), "to", to.String())
		}
		p.nodes = append(p.nodes, n)
	}
	p.outliers = newOutliers(cfg.Outlier, p.clock, p.nodes)
	p.outliers.log = func(n *node, from, to EjectionState, reason string) {
		p.log.Info("upstream outlier", "node", n.addr, "from", from.String(), "to", to.String(), "reason", reason)
		p.noteRotation()
	}
	p.rotation = len(p.nodes)
	p.outliers.setEnabled(!cfg.Outlier.Disabled)
	return p, nil
}

// SetBreakerEnabled turns the per-node breakers and outlier ejection on
// or off (the breaker defense). Turning them off resets every breaker to
// closed and returns every node to rotation; while off, outcomes are not
// recorded by the breakers.
func (p *Pool) SetBreakerEnabled(on bool) {
	p.breakerOn.Store(on)
	p.outliers.setEnabled(on && !p.cfg.Outlier.Disabled)
	if !on {
		for _, n := range p.nodes {
			n.breaker.Reset()
		}
	}
}

// SetRetryEnabled turns retries, hedges and attempt timeouts on or off
// (the retry defense). Calls still deposit into the budgets while off.
func (p *Pool) SetRetryEnabled(on bool) { p.retriesOn.Store(on) }

// Stats returns a snapshot of every node, in config order.
func (p *Pool) Stats() []NodeStats {
	out := make([]NodeStats, len(p.nodes))
	for i, n := range p.nodes {
		out[i] = NodeStats{
			Addr:     n.addr,
			Up:       n.up.Load(),
			Breaker:  n.breaker.State().String(),
			Ejection: p.outliers.current(n).String(),
			Inflight: n.inflight.Load(),
			Requests: n.requests.Load(),
			Failures: n.failures.Load(),
			Timeouts: n.fails[failTimeout].Load(),
		}
		if e := n.healthErr.Load(); e != nil {
			out[i].HealthError = *e
		}
	}
	return out
}

// Counters returns the pool's totals.
func (p *Pool) Counters() Counters {
	c := Counters{
		HedgesSent:    p.hedgesSent.Load(),
		HedgesWon:     p.hedgesWon.Load(),
		HedgesDenied:  p.hedgesDenied.Load(),
		DeadlineSkips: p.deadlineSkips.Load(),
		NoNode:        p.noNode.Load(),
	}
	for k := range p.attempts {
		c.Attempts += p.attempts[k].Load()
	}
	for i := range numPriorities {
		c.RetriesSent += p.retriesSent[i].Load()
		c.RetriesDenied += p.retriesDenied[i].Load()
	}
	return c
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

// picked is a node chosen for one attempt: its breaker generation, and
// whether the attempt holds one of its probe slots.
type picked struct {
	n     *node
	gen   uint64
	probe bool
}

// pick chooses a node not in tried for an attempt of the given priority
// and, with breakers on, gets its breaker's admission. The chosen node's
// outstanding count is already raised (so concurrent picks see it); undo
// with release if it is not used. Nodes in rotation are preferred; a
// node on probation takes a call of priority below P0 first (one probe
// slot each), and P0 only once it has waited the outlier Interval on
// probation (so P0 traffic alone still brings a healed node back) or when
// no node in rotation is left; ejected nodes are a last resort. It returns
// the reason when no node is left.
func (p *Pool) pick(tried []*node, priority int) (picked, error) {
	var candBuf [16]*node
	var loadBuf [16]int64
	var probeBuf, ejectBuf, overdueBuf [16]*node
	cand, loads := candBuf[:0], loadBuf[:0]
	probing, ejected := probeBuf[:0], ejectBuf[:0]
	breakerOn := p.breakerOn.Load()
	outliersOn := p.outliers.on.Load()
	anyUp := false
	for _, n := range p.nodes {
		if !n.up.Load() || contains(tried, n) {
			continue
		}
		anyUp = true
		if breakerOn && n.breaker.State() == StateOpen {
			continue
		}
		if outliersOn {
			switch p.outliers.current(n) {
			case Probing:
				probing = append(probing, n)
				continue
			case Ejected:
				ejected = append(ejected, n)
				continue
			}
		}
		cand = append(cand, n)
		loads = append(loads, n.inflight.Load())
	}
	if priority != HighestPriority {
		if pk, ok := p.probe(probing, breakerOn); ok {
			return pk, nil
		}
	} else if pk, ok := p.probe(p.outliers.overdue(probing, overdueBuf[:0]), breakerOn); ok {
		return pk, nil
	}
	for len(cand) > 0 {
		i := p.bal.Pick(loads)
		if i < 0 || i >= len(cand) {
			return picked{}, fmt.Errorf("upstream: balancer picked %d of %d nodes", i, len(cand))
		}
		if pk, ok := p.admit(cand[i], false, breakerOn); ok {
			return pk, nil
		}
		// Half-open with all probes out (or just reopened): drop and repick.
		cand = append(cand[:i], cand[i+1:]...)
		loads = append(loads[:i], loads[i+1:]...)
	}
	if priority == HighestPriority {
		if pk, ok := p.probe(probing, breakerOn); ok {
			return pk, nil
		}
	}
	for _, n := range ejected {
		if pk, ok := p.admit(n, false, breakerOn); ok {
			return pk, nil
		}
	}
	if anyUp {
		return picked{}, fmt.Errorf("%w: %w", ErrNoNode, ErrBreakerOpen)
	}
	return picked{}, ErrNoNode
}

// admit gets n's breaker admission (when breakers are on) and raises its
// outstanding count.
func (p *Pool) admit(n *node, probe, breakerOn bool) (picked, bool) {
	if !breakerOn {
		n.inflight.Add(1)
		return picked{n: n, probe: probe}, true
	}
	if gen, ok := n.breaker.Allow(); ok {
		n.inflight.Add(1)
		return picked{n: n, gen: gen, probe: probe}, true
	}
	return picked{}, false
}

// probe picks the first node on probation with a free probe slot.
func (p *Pool) probe(probing []*node, breakerOn bool) (picked, bool) {
	for _, n := range probing {
		if p.outliers.takeProbe(n) {
			if pk, ok := p.admit(n, true, breakerOn); ok {
				return pk, true
			}
			p.outliers.releaseProbe(n)
		}
	}
	return picked{}, false
}

func contains(ns []*node, n *node) bool {
	for _, x := range ns {
		if x == n {
			return true
		}
	}
	return false
}
