// Package gateway is Levee's AI gateway: an HTTP server in front of slow,
// expensive model nodes that runs every request through a defense chain —
// classify → rate limit → overload guard → bulkhead (concurrency limit and
// priority queue) → token budget → upstream pool (balancing, health,
// breakers, retry budget, deadline propagation) → fallback — and streams
// with bounded buffers and write deadlines. Each defense can be switched
// at run time through the admin API; with all of them off the gateway is a
// plain pass-through.
//
// Every response of a traffic route carries X-Levee-Outcome and is counted
// exactly once in levee_requests_total{route,priority,outcome}
// (docs/CONTRACTS.md).
//
// Request bodies (Authorization: Bearer KEY picks tenant and priority;
// X-Levee-Deadline-Ms bounds the whole request, capped by the route's
// timeout):
//
//	POST /v1/chat/completions  OpenAI chat body: messages (non-empty), max_tokens, stream
//	POST /v1/completions       OpenAI legacy completion: prompt (string, strings, token ids), max_tokens, n, best_of, stream
//	POST /v1/embeddings        OpenAI embeddings: input (string, strings, token ids)
//	POST /v1/predict           {"features":{…}}  → {"decision":…,"score":…}
//	POST /v1/agent             {"prompt":"…","max_tokens":64,"steps":3} → {"answer":…,"steps":k,"fan_out":n,"level":…,…}
//	GET  /v1/export?rows=N     NDJSON rows, streamed
//	GET  /v1/standard/…        small JSON, served locally
//	GET  /v1/models            a node's model list, relayed (route "other")
//
// Fallbacks (when the fallback defense is on) answer level black and
// upstream failures (no node, breaker open, connection failure, 5xx) on
// predict, chat and agent (never on completions and embeddings, whose
// calling programs would take a made-up text or vector for the model's), and agent tasks at the agent level black (the
// guard black, or agent.black_nodes_down of the nodes down). Rate
// limiting, yellow/red shedding, full or timed-out queues and the budget
// stay sheds (429/503), so clients see backpressure; a passed deadline
// stays a timeout (504). Agents degrade instead of being shed by priority
// (seed 004, agent.go): fewer steps and sub-calls by level and under
// budget pressure, a share of complex tasks dropped at red.
//
// Model requests reserve their estimated tokens (prompt characters / 4 +
// max_tokens × n; a completion's prompts + max_tokens × prompts × best_of;
// an embedding's inputs alone) in a budget by priority — P0 keeps budget.reserve_p0 of it,
// one request may take at most budget.max_request_tokens (over it: 400
// naming the cap) — and settle with the usage the model reports
// (tokens.go). Streamed answers promise "ok" in
// X-Levee-Outcome, carry the final outcome in the X-Levee-Outcome-Final
// trailer, and are cut (never cleanly ended) when they fail midway.
package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/gateway/upstream"
	"github.com/levee-lab/levee/internal/pressure"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Gateway in New.
type Option func(*options)

type options struct {
	log          *slog.Logger
	upstreamOpts []upstream.Option
	guardOpts    []admit.GuardOption
	store        ratelimit.Store
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithUpstreamOptions passes options to the upstream pool (tests: transport).
func WithUpstreamOptions(opts ...upstream.Option) Option {
	return func(o *options) { o.upstreamOpts = append(o.upstreamOpts, opts...) }
}

// WithGuardOptions passes options to the overload guard (tests: a fixed
// signal source with admit.WithSource).
func WithGuardOptions(opts ...admit.GuardOption) Option {
	return func(o *options) { o.guardOpts = append(o.guardOpts, opts...) }
}

// WithStore replaces the rate-limit store built from the config.
func WithStore(s ratelimit.Store) Option { return func(o *options) { o.store = s } }

// defense bits of Gateway.defenses.
const (
	defRateLimit uint32 = 1 << iota
	defGuard
	defBulkhead
	defBudget
	defBreaker
	defRetry
	defFallback
)

// Gateway is the defense chain and its HTTP handlers. Create it with New,
// start its background loops with Run, serve Handler (traffic) and
// AdminHandler, and Close it when done. Safe for concurrent use.
type Gateway struct {
	cfg  Config // immutable after New, except fields guarded by limMu
	log  *slog.Logger
	keys *keyTable

	rules       atomic.Pointer[ruleTable]
	store       ratelimit.Store
	storeCloser io.Closer

	guard      *admit.Guard // all signals: gates the model classes
	localGuard *admit.Guard // gateway-runtime signals only: stream, standard
	bulkheads  [numClasses]*admit.Bulkhead
	budget     *admit.Budget
	pool       *upstream.Pool
	press      *pressure.Generator
	lat        latencyTracker
	// queueWaits and budgetHolds are the Retry-After of queue and budget
	// sheds (retryafter.go).
	queueWaits  [numClasses]durationEWMA
	budgetHolds durationEWMA

	defenses     atomic.Uint32
	subcalls     *subcallPool  // agent sub-calls: amplification cap and bounded queue
	nodeSignals  *nodeSignals  // the model nodes' backpressure signal
	agentSeq     atomic.Uint64 // complex agent requests seen at red
	aiLimitRef   atomic.Int64  // configured ai limit: reference of inflight_ratio
	lastRotation atomic.Int64  // nodes in rotation last told to the limiters, ≥ 1 (see onRotation)

	limMu sync.Mutex // serializes admin changes of limits and thresholds

	m        *metrics
	draining atomic.Bool
	traffic  http.Handler
	admin    http.Handler

	runOnce sync.Once
	stop    context.CancelFunc
	done    chan struct{}
}

// New validates cfg and builds the gateway. It opens the rate-limit store
// and the upstream pool but starts nothing: call Run.
func New(cfg Config, opts ...Option) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{cfg: cfg, log: o.log, keys: newKeyTable(&cfg), press: pressure.New(), done: make(chan struct{})}

	rt, err := newRuleTable(cfg.RateLimit.Rules, g.keys.tenants)
	if err != nil {
		return nil, err
	}
	g.rules.Store(rt)
	g.store = o.store
	if g.store == nil {
		fo := cfg.RateLimit.Store.FailOpen
		st, closer, err := ratelimit.Open(ratelimit.StoreConfig{
			Kind:      cfg.RateLimit.Store.Kind,
			URL:       cfg.RateLimit.Store.URL,
			TimeoutMs: int(max(1, cfg.RateLimit.Store.Timeout.Milliseconds())),
			FailOpen:  &fo,
			Share:     cfg.RateLimit.Store.Share,
			Logger:    g.log,
		})
		if err != nil {
			return nil, fmt.Errorf("gateway: ratelimit.store: %w", err)
		}
		g.store, g.storeCloser = st, closer
	}

	g.lastRotation.Store(int64(len(cfg.Upstream.Nodes)))
	g.pool, err = upstream.New(normalizedUpstream(cfg.Upstream), append([]upstream.Option{upstream.WithLogger(g.log), upstream.WithRotationHook(g.onRotation)}, o.upstreamOpts...)...)
	if err != nil {
		g.closeStore()
		return nil, fmt.Errorf("gateway: %w", err)
	}

	g.aiLimitRef.Store(int64(cfg.Classes.AI.Limiter.Limit))
	g.nodeSignals = newNodeSignals(len(cfg.Upstream.Nodes), cfg.Guard.BackpressureTTL)
	th := g.thresholds(cfg.Guard)
	if err := th.Validate(); err != nil {
		g.Close()
		return nil, fmt.Errorf("gateway: guard: %w", err)
	}
	gopts := []admit.GuardOption{
		admit.WithExternal(g.signals),
		admit.WithHold(cfg.Guard.Cooldown),
		admit.WithProbeInterval(cfg.Guard.ProbeTick),
		admit.WithEvalInterval(cfg.Guard.Interval),
	}
	g.guard = admit.NewGuard(th, append(gopts, o.guardOpts...)...)
	g.localGuard = admit.NewGuard(localThresholds(th),
		admit.WithSource(g.localSignals), admit.WithHold(cfg.Guard.Cooldown), admit.WithEvalInterval(cfg.Guard.Interval))

	for c, cc := range g.classConfigs() {
		b, err := admit.NewBulkhead(classID(c).String(), cc)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("gateway: classes.%s: %w", classID(c), err)
		}
		g.bulkheads[c] = b
	}
	g.budget = admit.NewBudget(cfg.budgetConfig())
	g.subcalls = newSubcallPool(cfg.Agent.MaxSubcallsInflight, cfg.Agent.QueueSize)

	g.m = newMetrics(g)
	g.m.reg.MustRegister(g.pool.Collectors()...)
	if c, ok := g.store.(interface{ Collectors() []prometheus.Collector }); ok {
		g.m.reg.MustRegister(c.Collectors()...)
	}
	g.applyDefenses(cfg.Defenses)
	g.traffic = g.newTrafficHandler()
	g.admin = g.newAdminHandler()
	return g, nil
}

// Config returns the configuration in force: the one New was given, with
// the admin API's limit changes applied.
func (g *Gateway) Config() Config {
	g.limMu.Lock()
	defer g.limMu.Unlock()
	c := g.cfg
	c.RateLimit.Rules = slices.Clone(c.RateLimit.Rules)
	return c
}

// Registry returns the Prometheus registry served on /metrics.
func (g *Gateway) Registry() *prometheus.Registry { return g.m.reg }

// Handler returns the traffic handler (routes, /metrics, /healthz, /readyz).
func (g *Gateway) Handler() http.Handler { return g.traffic }

// AdminHandler returns the admin API handler; it checks the bearer token.
func (g *Gateway) AdminHandler(token string) http.Handler { return requireToken(token, g.admin) }

// Run starts the guard and the upstream health checks; it returns at once.
// They stop when ctx ends or Close is called.
func (g *Gateway) Run(ctx context.Context) {
	g.runOnce.Do(func() {
		ctx, g.stop = context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { g.guard.Run(ctx) })
		wg.Go(func() { g.localGuard.Run(ctx) })
		wg.Go(func() { g.pool.Run(ctx) })
		go func() { wg.Wait(); close(g.done) }()
	})
}

// SetDraining makes /readyz answer 503 (called when shutdown begins).
func (g *Gateway) SetDraining(on bool) { g.draining.Store(on) }

// Close stops the background loops, the pressure generator, the pool and
// the rate-limit store. Requests in flight should be drained first.
func (g *Gateway) Close() {
	started := false
	g.runOnce.Do(func() {}) // no Run after Close
	if g.stop != nil {
		g.stop()
		started = true
	}
	if started {
		<-g.done
	}
	if g.press != nil {
		g.press.Stop()
	}
	if g.pool != nil {
		g.pool.Close()
	}
	g.closeStore()
}

func (g *Gateway) closeStore() {
	if g.storeCloser != nil {
		_ = g.storeCloser.Close()
		g.storeCloser = nil
	}
}

// Defenses reports the current defense switches.
func (g *Gateway) Defenses() wire.Defenses {
	b := g.defenses.Load()
	return wire.Defenses{
		RateLimit: b&defRateLimit != 0, Guard: b&defGuard != 0, Bulkhead: b&defBulkhead != 0,
		Budget: b&defBudget != 0, Breaker: b&defBreaker != 0, Retry: b&defRetry != 0, Fallback: b&defFallback != 0,
	}
}

// SetDefenses switches every defense to d at once.
func (g *Gateway) SetDefenses(d wire.Defenses) { g.applyDefenses(d) }

func (g *Gateway) applyDefenses(d wire.Defenses) {
	var b uint32
	for i, on := range []bool{d.RateLimit, d.Guard, d.Bulkhead, d.Budget, d.Breaker, d.Retry, d.Fallback} {
		if on {
			b |= 1 << i
		}
	}
	g.limMu.Lock()
	defer g.limMu.Unlock()
	g.defenses.Store(b)
	for _, bh := range g.bulkheads {
		bh.SetEnabled(d.Bulkhead)
	}
	g.pool.SetBreakerEnabled(d.Breaker)
	g.pool.SetRetryEnabled(d.Retry)
}

func (g *Gateway) on(bit uint32) bool { return g.defenses.Load()&bit != 0 }

// Level returns the overload level that gates the model routes.
func (g *Gateway) Level() admit.Level { return g.guard.Level() }

// classConfigs returns the class configs in classID order.
func (g *Gateway) classConfigs() [numClasses]admit.BulkheadConfig {
	return g.cfg.Classes.byID()
}

// thresholds converts the config's watermarks to the guard's thresholds.
// inflight_ratio becomes an absolute in-flight count against the ai
// class's configured limit.
func (g *Gateway) thresholds(gc GuardConfig) admit.Thresholds {
	ref := float64(g.aiLimitRef.Load())
	level := func(pick func(Watermarks) float64) admit.Signals {
		infl := pick(gc.InflightRatio) * ref
		return admit.Signals{
			LagMs:                pick(gc.LagProbeP99Ms),
			SchedMs:              pick(gc.SchedLatencyP99Ms),
			GCPauseMs:            pick(gc.GCPauseP99Ms),
			HeapBytes:            uint64(pick(gc.HeapMB) * (1 << 20)),
			Inflight:             int64(math.Ceil(infl)),
			QueueFill:            min(pick(gc.QueueFill), 1),
			UpstreamLatencyRatio: pick(gc.UpstreamLatencyRatio),
			Backpressure:         min(pick(gc.BackpressureShare), 1),
		}
	}
	return admit.Thresholds{
		Yellow: level(func(w Watermarks) float64 { return w.Yellow }),
		Red:    level(func(w Watermarks) float64 { return w.Red }),
		Black:  level(func(w Watermarks) float64 { return w.Black }),
	}
}

// localThresholds keeps only the gateway-runtime signals of th.
func localThresholds(th admit.Thresholds) admit.Thresholds {
	strip := func(s admit.Signals) admit.Signals {
		s.Inflight, s.QueueFill, s.UpstreamLatencyRatio, s.Backpressure = 0, 0, 0, 0
		return s
	}
	return admit.Thresholds{Yellow: strip(th.Yellow), Red: strip(th.Red), Black: strip(th.Black)}
}

// signals are the upstream-side signals fed to the guard: upstream
// requests in flight, the fullest model-class queue, and upstream latency
// over its baseline. The in-flight watermarks are ratios to the ai class's
// configured limit (see thresholds); an adaptive limit moves away from it,
// so the count is scaled to the live limit: the ratio is to the limit in
// force.
func (g *Gateway) signals() admit.Signals {
	var infl int64
	for _, s := range g.pool.Stats() {
		infl += s.Inflight
	}
	if live, ref := g.bulkheads[classAI].Limiter().Limit(), g.aiLimitRef.Load(); live > 0 && ref > 0 {
		infl = int64(math.Round(float64(infl) * float64(ref) / float64(live)))
	}
	fill := 0.0
	for _, c := range []classID{classAI, classAgent} {
		st := g.bulkheads[c].Stats()
		if st.Enabled && st.QueueSize > 0 {
			fill = max(fill, float64(st.Queued())/float64(st.QueueSize))
		}
	}
	return admit.Signals{Inflight: infl, QueueFill: fill, UpstreamLatencyRatio: g.lat.ratio(infl),
		Backpressure: g.nodeSignals.share(time.Now())}
}

// localSignals are the main guard's own runtime measurements.
func (g *Gateway) localSignals() admit.Signals {
	s := g.guard.LastSignals()
	s.Inflight, s.QueueFill, s.UpstreamLatencyRatio, s.Backpressure = 0, 0, 0, 0
	return s
}

// guardFor returns the guard gating class c.
func (g *Gateway) guardFor(c classID) *admit.Guard {
	if c == classAI || c == classAgent {
		return g.guard
	}
	return g.localGuard
}

// ticket is an admitted request's hold on the chain: release it
// (release, releaseCall or refuse; each clears it, so a second release —
// a handler's deferred one — gives nothing back twice).
type ticket struct {
	permit   admit.Permit
	tokens   int64          // budget tokens held (0 when the budget was off)
	heldAt   time.Time      // when the budget tokens were reserved
	prio     admit.Priority // the request's priority
	estimate int64          // the request's estimated tokens
	rl       *ruleEntry     // the token-cost rule charged rlCost, for settlement (nil: none)
	rlCost   int64
}

// admitRequest runs rate limit → guard → bulkhead → budget for one request
// of identity id on route r costing tokens; now is the start of admission
// (a monotonic reading: the queue wait is measured from it). On success it
// returns a ticket to release; otherwise the shed. It does not allocate on
// the success path with the local store.
func (g *Gateway) admitRequest(ctx context.Context, id Identity, r routeID, tokens int64, now time.Time) (ticket, *shed) {
	return g.admit(ctx, id, r, tokens, tokens, now)
}

// admit is admitRequest with the rate limit's cost and the budget's
// reservation apart (an agent task reserves its budget itself, degrading
// its plan until it fits: budget 0 here).
func (g *Gateway) admit(ctx context.Context, id Identity, r routeID, tokens, budget int64, now time.Time) (ticket, *shed) {
	class := routeClass[r]
	t := ticket{prio: id.Priority, estimate: tokens}
	if g.on(defRateLimit) {
		if s := g.rateLimit(ctx, &t, id, r, tokens, now); s != nil {
			return ticket{}, s
		}
	}
	tk, s := g.admitGuarded(ctx, t, id, class, budget, now)
	if s != nil {
		g.refundRateLimit(&t)
	}
	return tk, s
}

// admitGuarded runs guard → bulkhead → budget for admitRequest.
func (g *Gateway) admitGuarded(ctx context.Context, t ticket, id Identity, class classID, tokens int64, now time.Time) (ticket, *shed) {
	if g.on(defGuard) {
		gd := g.guardFor(class)
		lvl := gd.Level()
		// Agents degrade by level instead (seed 004: planAgent) but for
		// black; the priorities still order their queue and split the
		// budget.
		if (class != classAgent || lvl == admit.Black) && !gd.Admit(id.Priority) {
			ra := retryAfterSeconds(gd.RetryAfter(id.Priority))
			switch {
			case lvl == admit.Black:
				return ticket{}, &shed{outcome: wire.OutcomeShedOverload, status: http.StatusServiceUnavailable, retryAfter: ra, black: true, msg: "overload level black"}
			case id.Priority == admit.P2:
				return ticket{}, &shed{outcome: wire.OutcomeShedOverload, status: http.StatusTooManyRequests,
					retryAfter: ra, msg: "overload level " + lvl.String() + ": P2 shed"}
			default:
				return ticket{}, &shed{outcome: wire.OutcomeShedOverload, status: http.StatusServiceUnavailable, retryAfter: ra, msg: "overload level " + lvl.String() + ": " + id.Priority.String() + " shed"}
			}
		}
	}
	p, err := g.bulkheads[class].Acquire(ctx, id.Priority)
	// The wait runs from the start of admission (now): the rate-limit
	// and guard steps before the queue take microseconds. A place
	// granted at once waited for nothing, and its admission is now; the
	// same reading starts the budget's hold. A clock read costs about a
	// seventh of admission on this path (BenchmarkAdmitVsRateAllow).
	admitted := now
	if err != nil || p.Queued() {
		admitted = time.Now()
	}
	wait := admitted.Sub(now)
	g.m.queueWait[class].Observe(wait.Seconds())
	g.noteQueueWait(class, wait, err)
	if err != nil {
		return t, g.acquireShed(class, err)
	}
	t.permit = p
	if s := g.reserveBudget(&t, id.Priority, tokens, admitted); s != nil {
		t.permit.Release(admit.Sample{})
		return ticket{}, s
	}
	g.m.admitted[class][id.Priority].Inc()
	return t, nil
}
