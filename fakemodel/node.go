package fakemodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/levee-lab/levee/internal/httpbody"
	"github.com/levee-lab/levee/internal/pressure"
	"github.com/levee-lab/levee/internal/wire"
)

// Option configures a Node (and every node of a Server).
type Option func(*options)

type options struct {
	knobs     Knobs
	token     string
	adminAny  bool
	log       *slog.Logger
	maxTokens int
}

// WithKnobs sets the starting knobs (default DefaultKnobs()). They are
// validated by NewNode.
func WithKnobs(k Knobs) Option { return func(o *options) { o.knobs = k } }

// WithAdminToken sets the bearer token of the admin API. It is required.
func WithAdminToken(tok string) Option { return func(o *options) { o.token = tok } }

// WithAdminAny lets non-loopback peers use the admin API (token still needed).
func WithAdminAny(any bool) Option { return func(o *options) { o.adminAny = any } }

// WithMaxTokens sets the bound of max_tokens (and max_completion_tokens):
// a request over it is a 400 naming the field. Default
// MaxCompletionTokens (openai.MaxTokens, 32768); NewNode refuses a bound
// outside 1..openai.MaxTokensCeiling. A node behind a gateway whose
// max_tokens_limit is raised for long-context backends takes the same.
func WithMaxTokens(n int) Option { return func(o *options) { o.maxTokens = n } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Node is one fake model: one listener, one knob set, one slot pool.
// Its methods are safe for concurrent use.
type Node struct {
	addr     string
	ln       net.Listener
	opts     options
	srv      *http.Server
	slots    *slotPool
	pressure *pressure.Generator
	metrics  *nodeMetrics

	knobsMu sync.Mutex            // serialises knob changes (read-modify-write of knobs)
	knobs   atomic.Pointer[Knobs] // the knobs in force; replaced whole, never mutated
	counts  [len(outcomesIdx)]atomic.Uint64

	draining  atomic.Bool
	stopHangs chan struct{} // closed when shutdown begins: hung requests end
	closed    chan struct{} // closed on hard close: waits and work end at once
	hangOnce  sync.Once
	closeOnce sync.Once

	serving    atomic.Int64 // requests between slot grant and release, counted by the handler
	maxServing atomic.Int64 // high-water mark of serving
	// idTag is random per node: with seq it makes answer ids unique
	// across the nodes of a lab and across restarts (newID).
	idTag string
	seq   atomic.Uint64
	// started is when the node was made: its model's created time in
	// GET /v1/models.
	started time.Time
}

// outcomesIdx indexes counts.
var outcomesIdx = wire.FakeOutcomes()

// NewNode makes a node that will serve on ln. It does not serve until Serve.
func NewNode(ln net.Listener, opts ...Option) (*Node, error) {
	o := options{knobs: DefaultKnobs(), log: slog.New(slog.NewTextHandler(io.Discard, nil)), maxTokens: MaxCompletionTokens}
	for _, opt := range opts {
		opt(&o)
	}
	if err := CheckMaxTokensBound(o.maxTokens); err != nil {
		return nil, fmt.Errorf("fakemodel: %w", err)
	}
	if len(o.token) < wire.MinAdminTokenLen {
		return nil, fmt.Errorf("fakemodel: the admin token must be at least %d characters (got %d)", wire.MinAdminTokenLen, len(o.token))
	}
	if o.adminAny {
		o.log.Warn("fakemodel: the admin API accepts non-loopback peers (admin-any); only the bearer token guards it")
	}
	if err := o.knobs.Validate(); err != nil {
		return nil, fmt.Errorf("fakemodel: starting knobs: %w", err)
	}
	n := &Node{
		addr:      ln.Addr().String(),
		ln:        ln,
		opts:      o,
		slots:     newSlotPool(o.knobs.Slots),
		pressure:  pressure.New(),
		stopHangs: make(chan struct{}),
		closed:    make(chan struct{}),
		idTag:     strconv.FormatUint(rand.Uint64(), 36),
		started:   time.Now(),
	}
	k := o.knobs
	n.knobs.Store(&k)
	if err := n.pressure.Set(k.Config); err != nil {
		return nil, fmt.Errorf("fakemodel: pressure knobs: %w", err)
	}
	n.metrics = newNodeMetrics(n)
	n.srv = &http.Server{
		// A body must arrive within the header timeout (the gateway sends
		// it whole); one the handler does not read cannot hold the
		// connection longer (internal/httpbody).
		Handler:           httpbody.Deadline(n.Handler(), readHeaderTimeout),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(o.log.Handler(), slog.LevelDebug),
	}
	return n, nil
}

// readHeaderTimeout bounds reading a request's headers, and its body.
const readHeaderTimeout = 5 * time.Second

// Addr is the node's listen address, host:port.
func (n *Node) Addr() string { return n.addr }

// Knobs returns the knobs in force.
func (n *Node) Knobs() Knobs { return *n.knobs.Load() }

// SetKnobs validates k and puts it in force (slots and pressure included).
func (n *Node) SetKnobs(k Knobs) error {
	if err := k.Validate(); err != nil {
		return err
	}
	n.knobsMu.Lock()
	defer n.knobsMu.Unlock()
	return n.applyLocked(k)
}

// PatchKnobs applies a partial JSON knob object atomically: it is decoded
// onto a copy of the knobs in force, validated, then swapped in whole. On
// error nothing changes and the error is a *KnobError.
func (n *Node) PatchKnobs(patch []byte) (Knobs, error) {
	n.knobsMu.Lock()
	defer n.knobsMu.Unlock()
	next, err := n.knobs.Load().Patch(patch)
	if err != nil {
		return n.Knobs(), err
	}
	if err := n.applyLocked(next); err != nil {
		return n.Knobs(), err
	}
	return next, nil
}

func (n *Node) applyLocked(k Knobs) error {
	if err := n.pressure.Set(k.Config); err != nil {
		return fmt.Errorf("fakemodel: pressure knobs: %w", err)
	}
	n.knobs.Store(&k)
	n.slots.setLimit(k.Slots)
	return nil
}

// Stats is a snapshot of a node, for tests and benchmarks.
type Stats struct {
	InService, Queued, Slots int
	// MaxInService is the most requests the handler ever had between slot
	// grant and release at once (counted independently of the slot pool).
	MaxInService int64
	// Outcomes counts requests by outcome.
	Outcomes map[string]uint64
}

// Stats returns a snapshot of the node.
func (n *Node) Stats() Stats {
	s := Stats{MaxInService: n.maxServing.Load(), Outcomes: make(map[string]uint64, len(outcomesIdx))}
	s.InService, s.Queued, s.Slots = n.slots.state()
	for i, o := range outcomesIdx {
		s.Outcomes[o] = n.counts[i].Load()
	}
	return s
}

func (n *Node) count(outcome string) {
	for i, o := range outcomesIdx {
		if o == outcome {
			n.counts[i].Add(1)
		}
	}
	n.metrics.requests.WithLabelValues(outcome).Inc()
}

// Handler is the node's full HTTP handler (traffic, health, metrics, admin).
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(wire.PathChat, n.handleChat)
	mux.HandleFunc(wire.PathPredict, n.handlePredict)
	mux.HandleFunc(wire.PathCompletions, n.handleCompletions)
	mux.HandleFunc(wire.PathEmbeddings, n.handleEmbeddings)
	mux.HandleFunc(wire.PathModels, n.handleModels)
	live := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
	mux.HandleFunc(wire.PathHealthz, live)
	mux.HandleFunc(wire.PathHealth, live) // vLLM's name for it
	mux.HandleFunc(wire.PathReadyz, func(w http.ResponseWriter, _ *http.Request) {
		if n.draining.Load() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.Handle(wire.PathMetrics, promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{}))
	mux.Handle(wire.PathAdmin, n.adminHandler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route "+r.URL.Path, "")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(wire.HeaderNode, n.addr)
		mux.ServeHTTP(w, r)
	})
}

// Serve serves until Shutdown or Close; it returns nil after those.
func (n *Node) Serve() error {
	err := n.srv.Serve(n.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, reports 503 on /readyz, ends hung requests
// (503), and lets queued and in-service requests finish until ctx is done;
// then it closes what is left. Pressure stops.
func (n *Node) Shutdown(ctx context.Context) error {
	n.draining.Store(true)
	n.hangOnce.Do(func() { close(n.stopHangs) })
	err := n.srv.Shutdown(ctx)
	if err != nil {
		n.Close()
		return fmt.Errorf("fakemodel: node %s drain: %w", n.addr, err)
	}
	n.pressure.Stop()
	return nil
}

// Close closes the listener and every connection at once.
func (n *Node) Close() error {
	n.draining.Store(true)
	n.hangOnce.Do(func() { close(n.stopHangs) })
	n.closeOnce.Do(func() { close(n.closed) })
	err := n.srv.Close()
	n.pressure.Stop()
	return err
}
