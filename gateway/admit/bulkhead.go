package admit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors returned by Bulkhead.Acquire.
var (
	// ErrQueueFull: the wait queue was full (fail fast), or this waiter was
	// displaced by a more important arrival.
	ErrQueueFull = errors.New("admit: bulkhead queue full")
	// ErrQueueTimeout: the request waited QueueTimeout without a permit.
	ErrQueueTimeout = errors.New("admit: bulkhead queue timeout")
)

// BulkheadConfig configures a Bulkhead.
type BulkheadConfig struct {
	// Limiter sets the concurrency limit. In YAML its knobs sit inline,
	// beside queue_size (algorithm, limit, min, max, …).
	Limiter LimiterConfig `yaml:",inline" json:"limiter"`
	// QueueSize is the most requests that may wait for a permit; 0 means
	// no queue (fail fast at the limit).
	QueueSize int `yaml:"queue_size" json:"queue_size"`
	// QueueTimeout is the longest wait; 0 means no timeout (only the
	// request's context bounds the wait).
	QueueTimeout time.Duration `yaml:"queue_timeout" json:"queue_timeout"`
}

// Validate reports the first invalid field of c, naming it.
func (c BulkheadConfig) Validate() error {
	if err := c.Limiter.Validate(); err != nil {
		return err
	}
	if c.QueueSize < 0 {
		return fmt.Errorf("admit: bulkhead field queue_size: %d, want ≥ 0", c.QueueSize)
	}
	if c.QueueTimeout < 0 {
		return fmt.Errorf("admit: bulkhead field queue_timeout: %v, want ≥ 0", c.QueueTimeout)
	}
	return nil
}

// BulkheadStats is a snapshot of a Bulkhead.
type BulkheadStats struct {
	Name       string             `json:"name"`
	Enabled    bool               `json:"enabled"`
	Inflight   int                `json:"inflight"`
	Limit      int                `json:"limit"`
	QueueDepth [NumPriorities]int `json:"queue_depth"` // waiters by priority, requeued ones awaiting a Release included (see Requeue)
	QueueSize  int                `json:"queue_size"`
}

// Queued is the total number of waiters.
func (s BulkheadStats) Queued() int {
	n := 0
	for _, d := range s.QueueDepth {
		n += d
	}
	return n
}

// Bulkhead bounds the requests in flight for one route class by a
// Limiter's limit, with a bounded wait queue ordered by priority (FIFO
// within a priority). It is safe for concurrent use.
type Bulkhead struct {
	name string

	mu       sync.Mutex
	cfg      BulkheadConfig          // guarded by mu
	limiter  Limiter                 // guarded by mu; replaced by SetConfig
	safer    SafeLimiter             // guarded by mu; limiter as a SafeLimiter, or nil
	enabled  bool                    // guarded by mu
	inflight int                     // guarded by mu
	urgentIn int                     // guarded by mu; P0 and P1 permits in flight (≤ inflight); bounded by the safe level (see SafeLimiter)
	queues   [NumPriorities]waitList // guarded by mu
	queued   int                     // guarded by mu; total waiters in queues
	parked   waitList                // guarded by mu; requeued waiters awaiting the next Release (see Requeue)
}

// NewBulkhead validates cfg and returns an enabled bulkhead.
func NewBulkhead(name string, cfg BulkheadConfig) (*Bulkhead, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bulkhead %q: %w", name, err)
	}
	lim, err := NewLimiter(cfg.Limiter)
	if err != nil {
		return nil, fmt.Errorf("bulkhead %q: %w", name, err)
	}
	b := &Bulkhead{name: name, cfg: cfg, enabled: true}
	b.setLimiterLocked(lim)
	return b, nil
}

// Name returns the bulkhead's name.
func (b *Bulkhead) Name() string { return b.name }

// Permit is one granted place in a Bulkhead. The zero Permit is released.
type Permit struct {
	b        *Bulkhead
	lim      Limiter
	inflight int    // in flight when granted, this one included
	ticket   uint64 // the limiter's ticket (see Ticketer)
	prio     Priority
	queued   bool // granted after waiting in the queue, not at once
}

// Queued reports whether p was granted after a wait in the queue; a permit
// granted at once waited for nothing (a caller timing the wait need not
// read the clock).
func (p *Permit) Queued() bool { return p.queued }

// Release gives the place back, feeds the limiter s (with s.Inflight and
// s.Ticket set from the grant; s.RTT ≤ 0 means the request never reached
// the backend: no measurement), moves the requests parked by Requeue to
// the front of their queues, and grants the best waiter. It clears p,
// so releasing the same Permit twice is harmless; do not release copies
// of one Permit.
func (p *Permit) Release(s Sample) {
	b := p.b
	if b == nil {
		return
	}
	lim := p.lim
	s.Inflight, s.Ticket = p.inflight, p.ticket
	prio := p.prio
	*p = Permit{}
	lim.OnSample(s)
	b.mu.Lock()
	b.inflight--
	if prio != P2 {
		b.urgentIn--
	}
	b.unparkLocked()
	b.dispatchLocked()
	b.mu.Unlock()
}

// Observe reports the request's latency signal before it ends (a stream's
// time to first token) to a limiter that takes it (LatencyObserver); the
// Release that follows should carry the same Latency. It does nothing on a
// released Permit.
func (p *Permit) Observe(latency time.Duration) {
	if p.b == nil || latency <= 0 {
		return
	}
	if o, ok := p.lim.(LatencyObserver); ok {
		o.OnLatency(p.ticket, p.inflight, latency)
	}
}

// Acquire returns a permit at once when fewer than Limit requests are in
// flight (or the bulkhead is disabled). Otherwise the request waits in the
// queue of its priority; it gets ErrQueueFull at once when the queue is
// full and holds no less important waiter to displace (an arrival on a
// full queue displaces the newest waiter of the lowest priority below its
// own, which then gets ErrQueueFull), ErrQueueTimeout after QueueTimeout,
// or ctx.Err() when ctx ends first (or has already ended). Waiters are
// granted best priority first, oldest first within a priority. An invalid
// priority is an error.
func (b *Bulkhead) Acquire(ctx context.Context, p Priority) (Permit, error) {
	if !p.Valid() {
		return Permit{}, fmt.Errorf("bulkhead %q: invalid priority %d", b.name, uint8(p))
	}
	if err := ctx.Err(); err != nil {
		return Permit{}, err
	}
	b.mu.Lock()
	if pm, ok := b.tryLocked(p); ok {
		b.mu.Unlock()
		return pm, nil
	}
	w := getWaiter(p)
	if err := b.enqueueLocked(w); err != nil {
		b.mu.Unlock()
		putWaiter(w)
		return Permit{}, err
	}
	return b.wait(ctx, w)
}

// wait blocks until w, queued or parked with mu held (wait unlocks it),
// is decided, times out or ctx ends, and returns its permit or error.
func (b *Bulkhead) wait(ctx context.Context, w *waiter) (Permit, error) {
	timeout := b.cfg.QueueTimeout
	b.mu.Unlock()

	var timerC <-chan time.Time
	if timeout > 0 {
		w.timer.Reset(timeout)
		timerC = w.timer.C
	}
	var err error
	select {
	case <-w.signal:
		// Decided under mu: granted or displaced.
	case <-timerC:
		err = ErrQueueTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	if timeout > 0 {
		w.timer.Stop()
	}
	b.mu.Lock()
	if w.decided {
		// Granted or displaced, possibly while the timer or ctx fired: the
		// decision stands (a grant must not be lost).
		err = w.err
		select {
		case <-w.signal:
		default:
		}
	} else {
		b.removeLocked(w)
	}
	permit := Permit{}
	if err == nil {
		permit = b.permitLocked(w)
		permit.queued = true
		// A grant made while ctx also ended is kept: the caller sees a permit
		// and must release it.
	}
	b.mu.Unlock()
	putWaiter(w)
	return permit, err
}

// tryLocked grants a permit at once when there is room and nobody waits
// (or the bulkhead is disabled).
func (b *Bulkhead) tryLocked(p Priority) (Permit, bool) {
	if b.enabled {
		b.dispatchLocked()
		if b.inflight >= b.limiter.Limit() {
			return Permit{}, false
		}
		if s := b.safeLocked(); s > 0 && b.inflight >= s && b.urgentIn >= s {
			// P0 and P1 hold the safe level's places: only P2 explores
			// above it. The waiters left after dispatch are P0 and P1,
			// who may not take this place: a P2 arrival takes it rather
			// than leave it empty.
			if p != P2 {
				return Permit{}, false
			}
		} else if b.queued > 0 {
			return Permit{}, false
		}
	}
	b.inflight++
	if p != P2 {
		b.urgentIn++
	}
	return Permit{b: b, lim: b.limiter, inflight: b.inflight, ticket: ticket(b.limiter), prio: p}, true
}

// enqueueLocked queues w (displacing a less important waiter when the
// queue is full), or returns ErrQueueFull.
func (b *Bulkhead) enqueueLocked(w *waiter) error {
	if b.queued >= b.cfg.QueueSize && !b.displaceLocked(w.prio) {
		return ErrQueueFull
	}
	b.queues[w.prio].pushBack(w)
	b.queued++
	return nil
}

// removeLocked takes an undecided waiter out of its queue (or the parked
// list).
func (b *Bulkhead) removeLocked(w *waiter) {
	if w.parked {
		b.parked.remove(w)
		w.parked = false
		return
	}
	b.queues[w.prio].remove(w)
	b.queued--
}

// permitLocked is the permit of a granted waiter.
func (b *Bulkhead) permitLocked(w *waiter) Permit {
	return Permit{b: b, lim: b.limiter, inflight: w.inflight, ticket: w.ticket, prio: w.prio}
}

// dispatchLocked grants waiters, best first, while there is room.
func (b *Bulkhead) dispatchLocked() {
	if b.queued == 0 {
		return
	}
	lim := b.limiter.Limit()
	if !b.enabled {
		lim = int(^uint(0) >> 1)
	}
	safe := b.safeLocked()
	for b.queued > 0 && b.inflight < lim {
		var w *waiter
		if b.enabled && safe > 0 && b.inflight >= safe && b.urgentIn >= safe {
			// P0 and P1 hold the safe level's places: above it only P2
			// explores. While they hold fewer, the best waiter takes a
			// free place: counting P2's places against them let the P2
			// that refill every place a release frees keep the calls in
			// flight at the safe level for good, and the P0 waiting
			// starved (traced: 5 gateways in front of 3×64 slots that
			// answer 429, the backend 3× slower: a gateway at limit 96,
			// safe 64, its P0 timing out in its queue while the nodes had
			// 63 places free; P0 0.905).
			if w = b.queues[P2].head; w == nil {
				return
			}
		} else {
			for i := range b.queues {
				if w = b.queues[i].head; w != nil {
					break
				}
			}
		}
		b.removeLocked(w)
		b.inflight++
		if w.prio != P2 {
			b.urgentIn++
		}
		w.decided, w.err, w.inflight, w.ticket = true, nil, b.inflight, ticket(b.limiter)
		w.wake()
	}
}

func (b *Bulkhead) setLimiterLocked(l Limiter) {
	b.limiter = l
	b.safer, _ = l.(SafeLimiter)
}

// safeLocked is the limiter's safe level (see SafeLimiter), 0 for none.
func (b *Bulkhead) safeLocked() int {
	if b.safer == nil {
		return 0
	}
	return b.safer.Safe()
}

// displaceLocked makes room for an arrival of priority p by failing the
// newest waiter of the lowest priority strictly below p; it reports
// whether it did.
func (b *Bulkhead) displaceLocked(p Priority) bool {
	for i := NumPriorities - 1; i > int(p); i-- {
		if w := b.queues[i].tail; w != nil {
			b.failLocked(w, ErrQueueFull)
			return true
		}
	}
	return false
}

func (b *Bulkhead) failLocked(w *waiter, err error) {
	b.removeLocked(w)
	w.decided, w.err = true, err
	w.wake()
}

// Stats returns a snapshot.
func (b *Bulkhead) Stats() BulkheadStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := BulkheadStats{
		Name:      b.name,
		Enabled:   b.enabled,
		Inflight:  b.inflight,
		Limit:     b.limiter.Limit(),
		QueueSize: b.cfg.QueueSize,
	}
	for i := range b.queues {
		s.QueueDepth[i] = b.queues[i].n
	}
	// Requeued requests awaiting a Release wait too (at most the places
	// in flight: a short walk).
	for w := b.parked.head; w != nil; w = w.next {
		s.QueueDepth[w.prio]++
	}
	return s
}

// Config returns the current configuration.
func (b *Bulkhead) Config() BulkheadConfig {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg
}

// SetConfig changes the configuration while requests flow. A changed
// Limiter section builds a new limiter (starting at its Limit); permits
// granted before feed their samples to the old one. A smaller QueueSize
// fails the newest, least important waiters beyond it with ErrQueueFull; a
// new QueueTimeout applies to requests that start waiting afterwards.
func (b *Bulkhead) SetConfig(cfg BulkheadConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("bulkhead %q: %w", b.name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cfg.Limiter != b.cfg.Limiter {
		lim, err := NewLimiter(cfg.Limiter)
		if err != nil {
			return fmt.Errorf("bulkhead %q: %w", b.name, err)
		}
		b.setLimiterLocked(lim)
	}
	b.cfg = cfg
	for b.queued > cfg.QueueSize {
		b.displaceLocked(0) // cannot fail while P1/P2 wait…
		if b.queues[P1].n == 0 && b.queues[P2].n == 0 && b.queued > cfg.QueueSize {
			b.failLocked(b.queues[P0].tail, ErrQueueFull)
		}
	}
	b.dispatchLocked()
	return nil
}

// SetEnabled switches the bulkhead. Disabled, Acquire grants at once (no
// limit, no queue; waiters are granted) but still counts requests in flight.
func (b *Bulkhead) SetEnabled(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enabled = on
	b.dispatchLocked()
}

// Enabled reports whether the bulkhead limits.
func (b *Bulkhead) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// Limiter returns the current limiter.
func (b *Bulkhead) Limiter() Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limiter
}
