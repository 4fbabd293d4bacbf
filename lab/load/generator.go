package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/internal/wire"
)

// MaxRate is the highest rate SetRate accepts, in requests per second.
const MaxRate = 1e6

// Generator offers open-loop load: arrivals are scheduled by their intended
// time whatever the responses do, so slow answers never throttle the rate and
// latency, measured from the intended time, shows every bit of queueing
// (no coordinated omission). Every offered request ends in exactly one
// outcome. All methods are safe for concurrent use.
type Generator struct {
	cfg    Config
	client *http.Client
	// clock schedules arrivals and measures latency and windows. Request
	// deadlines and slow readers' pacing stay on real time: the transport
	// and the server live there.
	clock clockwork.Clock

	rate    atomic.Uint64 // math.Float64bits of the target rate
	wake    chan struct{} // buffered(1): the rate changed
	running atomic.Bool   // Run was called

	slowMu    sync.Mutex // guards slowShare, slowKBps
	slowShare float64
	slowKBps  float64

	targetsMu sync.RWMutex // guards targets
	targets   []string     // base URLs without a trailing slash

	outstanding atomic.Int64
	wg          sync.WaitGroup // one per request in flight

	stats *stats

	budget   *retryBudget      // nil without a retry budget
	ref      *referenceLimiter // nil without Config.Reference; scheduler goroutine only
	jit      *jitter           // backoff jitter
	stopping chan struct{}     // closed when Run stops scheduling: no more retries
	stopOnce sync.Once

	timeMu  sync.Mutex // guards started, stopped
	started time.Time  // Run began scheduling
	stopped time.Time  // Run stopped scheduling (zero while scheduling)
}

// Option configures a Generator.
type Option func(*Generator)

// WithHTTPClient makes the generator send with c. c.Timeout should be zero:
// the generator bounds each request by Config.ClientTimeout itself.
func WithHTTPClient(c *http.Client) Option { return func(g *Generator) { g.client = c } }

// WithClock makes the generator schedule arrivals, measure latency and
// time its windows by c (default: the real clock). Tests pass a
// clockwork.FakeClock to step the schedule deterministically.
func WithClock(c clockwork.Clock) Option { return func(g *Generator) { g.clock = c } }

// WithTransport makes the generator send through rt.
func WithTransport(rt http.RoundTripper) Option {
	return func(g *Generator) { g.client = &http.Client{Transport: rt} }
}

// NewTransport returns the transport a Generator uses by default: many idle
// connections per host, no compression, no HTTP/2, short dial timeout.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          0, // no total cap
		MaxIdleConnsPerHost:   4096,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ExpectContinueTimeout: 0,
		WriteBufferSize:       16 << 10,
		ReadBufferSize:        16 << 10,
	}
}

// New returns a Generator for cfg, or an error naming what is wrong with cfg.
// Its rate starts at 0: call SetRate.
func New(cfg Config, opts ...Option) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		cfg:      cfg,
		wake:     make(chan struct{}, 1),
		stats:    newStats(),
		jit:      newJitter(cfg.Seed),
		stopping: make(chan struct{}),
	}
	if cfg.Retry.Budget > 0 {
		g.budget = newRetryBudget(cfg.Retry)
	}
	g.ref = newReferenceLimiter(cfg.Reference)
	g.targets = normalizeTargets(cfg.Targets)
	for _, o := range opts {
		o(g)
	}
	if g.client == nil {
		g.client = &http.Client{Transport: NewTransport()}
	}
	if g.clock == nil {
		g.clock = clockwork.NewRealClock()
	}
	// Redirects are answers too: never follow them silently.
	if g.client.CheckRedirect == nil {
		c := *g.client
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		g.client = &c
	}
	return g, nil
}

func normalizeTargets(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = strings.TrimRight(u, "/")
	}
	return out
}

// SetRate sets the target arrival rate in requests per second; 0 pauses the
// arrivals. It takes effect at the next arrival (at once when the generator
// is paused or the next arrival was due later than the new rate implies).
// It returns an error, and leaves the rate unchanged, for a negative, NaN,
// infinite or above-MaxRate value.
func (g *Generator) SetRate(rps float64) error {
	if math.IsNaN(rps) || math.IsInf(rps, 0) || rps < 0 || rps > MaxRate {
		return fmt.Errorf("load: rate must be within [0, %g] req/s, got %v", MaxRate, rps)
	}
	g.rate.Store(math.Float64bits(rps))
	select {
	case g.wake <- struct{}{}:
	default:
	}
	return nil
}

// Rate returns the target arrival rate.
func (g *Generator) Rate() float64 { return math.Float64frombits(g.rate.Load()) }

// SetSlowClients makes a share (0..1) of stream (chat-stream,
// completions-stream) and export requests read
// their body at kbps KB/s (1 KB = 1024 bytes); share 0 turns it off. It
// applies to arrivals from now on. It returns an error, changing nothing, for
// a share outside [0, 1] or a non-positive kbps with a positive share.
func (g *Generator) SetSlowClients(share, kbps float64) error {
	if math.IsNaN(share) || share < 0 || share > 1 {
		return fmt.Errorf("load: slow client share must be within [0, 1], got %v", share)
	}
	if share > 0 && (math.IsNaN(kbps) || math.IsInf(kbps, 0) || kbps <= 0) {
		return fmt.Errorf("load: slow client speed must be > 0 KB/s, got %v", kbps)
	}
	g.slowMu.Lock()
	g.slowShare, g.slowKBps = share, kbps
	g.slowMu.Unlock()
	return nil
}

// SlowClients returns the share and speed set by SetSlowClients.
func (g *Generator) SlowClients() (share, kbps float64) {
	g.slowMu.Lock()
	defer g.slowMu.Unlock()
	return g.slowShare, g.slowKBps
}

// SetTargets replaces the gateway base URLs for arrivals from now on. It
// returns an error, changing nothing, when the list is empty or a URL is not
// an http(s) base URL.
func (g *Generator) SetTargets(urls []string) error {
	if err := validateTargets(urls); err != nil {
		return err
	}
	t := normalizeTargets(urls)
	g.targetsMu.Lock()
	g.targets = t
	g.targetsMu.Unlock()
	return nil
}

// Targets returns the current target base URLs.
func (g *Generator) Targets() []string {
	g.targetsMu.RLock()
	defer g.targetsMu.RUnlock()
	return append([]string(nil), g.targets...)
}

// Outstanding returns the number of requests in flight.
func (g *Generator) Outstanding() int { return int(g.outstanding.Load()) }

// Tick returns the counters since the start and since the previous Tick, and
// starts a new window. Only one caller (the lab's sampler) should call it,
// or the windows split between callers.
//
// The window ends now by the clock, also after Run stopped scheduling: the
// requests still in flight end in real time, and their window must be as
// long as the time they ended in (a window frozen at the stop made a drain
// of seconds look like a burst within one tick).
func (g *Generator) Tick() Window {
	started, end := g.times()
	return g.stats.window(g.clock.Now(), end, started, g.Rate(), g.Outstanding())
}

// Totals returns the cumulative counters and latency histograms. Once Run
// has returned, Totals.Unaccounted() is 0.
func (g *Generator) Totals() Totals {
	started, end := g.times()
	return g.stats.totals(end, started, g.Rate(), g.Outstanding())
}

// times returns when scheduling started and now, or when it stopped if it has.
func (g *Generator) times() (started, end time.Time) {
	g.timeMu.Lock()
	defer g.timeMu.Unlock()
	if !g.stopped.IsZero() {
		return g.started, g.stopped
	}
	return g.started, g.clock.Now()
}

// Run schedules arrivals until ctx ends, then stops scheduling, waits for the
// requests in flight (each bounded by ClientTimeout, and never cancelled by
// ctx: they finish or time out and are counted) and returns nil. Run may be
// called once; a second call returns an error at once.
func (g *Generator) Run(ctx context.Context) error {
	if !g.running.CompareAndSwap(false, true) {
		return errors.New("load: Run called twice")
	}
	start := g.clock.Now()
	g.timeMu.Lock()
	g.started = start
	g.timeMu.Unlock()

	end := g.schedule(ctx, start)
	if end.Before(start) { // ctx had ended before Run began
		end = start
	}

	g.timeMu.Lock()
	g.stopped = end
	g.timeMu.Unlock()
	g.stopOnce.Do(func() { close(g.stopping) })
	g.wg.Wait()
	g.client.CloseIdleConnections()
	return nil
}

// schedule is the arrival loop. It owns the random sources. Arrivals whose
// intended time has passed (the loop was late) are sent at once with their
// intended time, so latency includes the lateness and the count is exact.
// When ctx ends, the arrivals intended before the end that the loop had not
// reached yet are still offered; schedule returns the end: ctx's deadline
// when it has passed, else the moment the loop saw ctx end.
func (g *Generator) schedule(ctx context.Context, start time.Time) time.Time {
	arr := newArrivals(g.cfg.Arrival, g.cfg.Seed)
	mix := newMixer(g.cfg.Mix, g.cfg.Seed)
	var timer clockwork.Timer // made at the first wait: a fake clock counts it as a waiter
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()

	// finish offers the arrivals intended before the end, from next on at rate.
	finish := func(next time.Time, rate float64) time.Time {
		end := g.endOf(ctx)
		for !next.IsZero() && next.Before(end) {
			g.arrive(next, mix)
			next = arr.next(next, rate)
		}
		return end
	}

	// A SetRate before Run left a wake-up that means nothing now; dropping it
	// keeps the schedule a pure function of the seed and the rate changes.
	select {
	case <-g.wake:
	default:
	}
	last := start    // intended time of the previous arrival, or when arrivals (re)started
	starting := true // no arrival since last: the first is due at last (constant arrivals)
	// following is the arrival after last at rate r.
	following := func(r float64) time.Time {
		if starting {
			return arr.first(last, r)
		}
		return arr.next(last, r)
	}
	for {
		rate := g.Rate()
		if rate <= 0 {
			select {
			case <-ctx.Done():
				return g.endOf(ctx)
			case <-g.wake:
				last, starting = g.clock.Now(), true
				continue
			}
		}
		next := following(rate)
	wait:
		for {
			d := g.clock.Until(next)
			if d <= 0 {
				break
			}
			if timer == nil {
				timer = g.clock.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-ctx.Done():
				return finish(next, rate)
			case <-g.wake:
				timer.Stop()
				r := g.Rate()
				if r <= 0 {
					last, starting = g.clock.Now(), true
					// Paused: go back to the top, which waits for a rate.
					next = time.Time{}
					break wait
				}
				// The new rate takes effect now, never in the past (see
				// the arrival processes' rerate).
				rate = r
				next = arr.rerate(last, g.clock.Now(), r, starting)
			case <-timer.Chan():
			}
		}
		if next.IsZero() {
			continue
		}
		// The context's timer may fire a little late: an arrival intended at
		// or after the deadline is past the end even before ctx says so.
		if dl, ok := ctx.Deadline(); ctx.Err() != nil || ok && !next.Before(dl) {
			return finish(next, rate)
		}
		g.arrive(next, mix)
		last, starting = next, false
	}
}

// endOf is when ctx ended: its deadline if that has passed, else now.
func (g *Generator) endOf(ctx context.Context) time.Time {
	now := g.clock.Now()
	if dl, ok := ctx.Deadline(); ok && dl.Before(now) {
		return dl
	}
	return now
}

// arrive offers one request intended at t: it is sent, or dropped when the
// outstanding cap is full. Called by the scheduler goroutine only.
func (g *Generator) arrive(t time.Time, mix *mixer) {
	g.targetsMu.RLock()
	targets := g.targets
	g.targetsMu.RUnlock()
	share, kbps := g.SlowClients()
	spec := mix.next(targets, share, kbps)
	ri := routeIndex(spec.route)
	tags := g.stats.offer(spec.priority, ri)

	if g.outstanding.Add(1) > int64(g.cfg.MaxOutstanding) {
		g.outstanding.Add(-1)
		g.stats.finish(spec.priority, ri, sent{outcome: wire.OutcomeGeneratorDropped}, 0, false, tags)
		return
	}
	refPassed := g.ref.passes(spec.priority, t)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		a := g.request(spec, tags)
		lat := g.clock.Since(t)
		g.stats.finish(spec.priority, ri, a, lat, refPassed, tags)
		g.outstanding.Add(-1)
	}()
}

// request sends an arrival's attempts — one, or more under the retry
// policy — and returns the last one. Once Run stops scheduling, no
// further retry is sent.
func (g *Generator) request(s spec, tags []tag) sent {
	p := g.cfg.Retry
	for n := 1; ; n++ {
		if n == 1 && g.budget != nil {
			g.budget.request(g.clock.Now())
		}
		g.stats.attempt(s.priority, n > 1, tags)
		a := g.send(s, n)
		if a.resent > 0 {
			g.stats.resent(a.resent, tags)
		}
		o := a.outcome
		if n >= p.Attempts || !p.retries(o, a.status) {
			return a
		}
		if g.budget != nil && !g.budget.withdraw(g.clock.Now()) {
			g.stats.retryDenied(tags)
			return a
		}
		if !g.waitToRetry(p.backoff(n, g.jit.float)) {
			return a
		}
		if _, shed := o.ShedReason(); shed {
			g.stats.shedRetried(o, tags) // a shed the gateway counted, not this request's outcome
		}
	}
}

// waitToRetry waits d on the generator's clock; false when Run stopped
// scheduling first (no retry is sent after the end).
func (g *Generator) waitToRetry(d time.Duration) bool {
	if d > 0 {
		t := g.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.Chan():
		case <-g.stopping:
			return false
		}
	}
	select {
	case <-g.stopping:
		return false
	default:
		return true
	}
}
