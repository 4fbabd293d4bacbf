package upstream

import (
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// BreakerState is a circuit breaker's state.
type BreakerState int

// Breaker states; the numbers are the levee_upstream_breaker_state values.
const (
	StateClosed   BreakerState = 0
	StateHalfOpen BreakerState = 1
	StateOpen     BreakerState = 2
)

func (s BreakerState) String() string {
	switch s {
	case StateClosed:
		return wire.BreakerClosed
	case StateHalfOpen:
		return wire.BreakerHalfOpen
	case StateOpen:
		return wire.BreakerOpen
	}
	return "unknown"
}

const breakerBuckets = 10

// Breaker is a per-node circuit breaker over a rolling window of
// breakerBuckets buckets. Closed: calls pass and outcomes are counted; when
// the window holds ≥ MinRequests outcomes with failure share ≥ FailureRatio it
// opens. Open: calls are refused until OpenFor has passed, then it is
// half-open. Half-open: at most HalfOpenProbes calls in flight; a failed
// probe reopens it, HalfOpenProbes successful probes close it.
//
// Every admitted call must be reported once with Record, passing the
// generation Allow returned; reports from an older generation (before a
// state change) are ignored.
type Breaker struct {
	cfg   BreakerConfig
	clock Clock

	mu       sync.Mutex
	state    BreakerState            // guarded by mu
	gen      uint64                  // guarded by mu; bumped on every state change
	openedAt time.Time               // guarded by mu; when state became open
	probes   int                     // guarded by mu; half-open probes in flight
	probeOK  int                     // guarded by mu; half-open probes succeeded
	ring     timeRing[breakerBucket] // guarded by mu
	onChange func(from, to BreakerState)
}

// breakerBucket is one time bucket of a breaker's window.
type breakerBucket struct{ total, failed int }

// NewBreaker returns a closed breaker. cfg zero fields take defaults; clock
// nil means the real clock.
func NewBreaker(cfg BreakerConfig, clock Clock) *Breaker {
	if clock == nil {
		clock = realClock{}
	}
	cfg = cfg.WithDefaults()
	return &Breaker{cfg: cfg, clock: clock, ring: newTimeRing[breakerBucket](breakerBuckets, cfg.Window, clock.Now())}
}

// State reports the current state, moving open to half-open once OpenFor
// has passed.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tick(b.clock.Now())
	return b.state
}

// Allow asks to make one call. ok is false when the breaker refuses it;
// otherwise the caller must Record(gen, failed) exactly once.
func (b *Breaker) Allow() (gen uint64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tick(b.clock.Now())
	switch b.state {
	case StateOpen:
		return b.gen, false
	case StateHalfOpen:
		if b.probes+b.probeOK >= b.cfg.HalfOpenProbes {
			return b.gen, false
		}
		b.probes++
	}
	return b.gen, true
}

// Record reports the outcome of a call admitted by Allow in generation gen.
func (b *Breaker) Record(gen uint64, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.tick(now)
	if gen != b.gen {
		return
	}
	switch b.state {
	case StateClosed:
		bk := b.ring.at(now)
		bk.total++
		if failed {
			bk.failed++
		}
		var total, nfail int
		for _, x := range b.ring.buckets {
			total += x.total
			nfail += x.failed
		}
		if total >= b.cfg.MinRequests && float64(nfail) >= b.cfg.FailureRatio*float64(total) {
			b.set(StateOpen, now)
		}
	case StateHalfOpen:
		b.probes--
		if failed {
			b.set(StateOpen, now)
			return
		}
		b.probeOK++
		if b.probeOK >= b.cfg.HalfOpenProbes {
			b.set(StateClosed, now)
		}
	}
}

// Reset closes the breaker and forgets its window.
func (b *Breaker) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != StateClosed {
		b.set(StateClosed, b.clock.Now())
	}
}

// tick moves open → half-open after OpenFor. Caller holds mu.
func (b *Breaker) tick(now time.Time) {
	if b.state == StateOpen && now.Sub(b.openedAt) >= b.cfg.OpenFor {
		b.set(StateHalfOpen, now)
	}
}

// set changes state, bumping the generation. Caller holds mu.
func (b *Breaker) set(to BreakerState, now time.Time) {
	from := b.state
	b.state = to
	b.gen++
	b.probes, b.probeOK = 0, 0
	switch to {
	case StateOpen:
		b.openedAt = now
	case StateClosed:
		b.ring.reset(now)
	}
	if b.onChange != nil && from != to {
		b.onChange(from, to)
	}
}

// unadmit returns an admission from Allow that was never used, without
// counting an outcome.
func (b *Breaker) unadmit(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen == b.gen && b.state == StateHalfOpen && b.probes > 0 {
		b.probes--
	}
}
