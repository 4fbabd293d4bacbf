package upstream

import (
	"math"
	"sync"
	"time"
)

const budgetBuckets = 10

// RetryBudget is a token retry budget in the style of Finagle's
// RetryBudget and Envoy's retry_budget: every request deposits Ratio
// tokens, every retry withdraws one whole token, deposits and withdrawals
// expire after TTL, and a reserve of MinPerSecond×TTL tokens is always
// there. So within any TTL window, retries ≤ Ratio × requests +
// MinPerSecond × TTL. Accounting is in integer milli-tokens, so it is exact
// (ten requests at Ratio 0.1 buy exactly one retry).
type RetryBudget struct {
	clock   Clock
	deposit int64 // milli-tokens per request
	reserve int64 // milli-tokens always available
	width   time.Duration

	mu         sync.Mutex
	buckets    [budgetBuckets]struct{ in, out int64 } // guarded by mu; milli-tokens
	bucketTime time.Time                              // guarded by mu
	cur        int                                    // guarded by mu
}

// NewRetryBudget returns a budget; zero fields of cfg take defaults, nil
// clock means the real clock.
func NewRetryBudget(cfg RetryBudgetConfig, clock Clock) *RetryBudget {
	if clock == nil {
		clock = realClock{}
	}
	cfg = cfg.WithDefaults()
	w := cfg.TTL / budgetBuckets
	if w <= 0 {
		w = 1
	}
	return &RetryBudget{
		clock:      clock,
		deposit:    int64(math.Round(cfg.Ratio * 1000)),
		reserve:    int64(math.Floor(cfg.MinPerSecond * cfg.TTL.Seconds() * 1000)),
		width:      w,
		bucketTime: clock.Now(),
	}
}

// Deposit records one request.
func (r *RetryBudget) Deposit() {
	r.mu.Lock()
	r.roll(r.clock.Now())
	r.buckets[r.cur].in += r.deposit
	r.mu.Unlock()
}

// TryWithdraw takes one token for a retry and reports whether there was one.
func (r *RetryBudget) TryWithdraw() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roll(r.clock.Now())
	if r.balanceLocked() < 1000 {
		return false
	}
	r.buckets[r.cur].out += 1000
	return true
}

// Balance reports the whole tokens available now.
func (r *RetryBudget) Balance() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roll(r.clock.Now())
	return int(r.balanceLocked() / 1000)
}

func (r *RetryBudget) balanceLocked() int64 {
	bal := r.reserve
	for _, b := range r.buckets {
		bal += b.in - b.out
	}
	return bal
}

func (r *RetryBudget) roll(now time.Time) {
	steps := int64(now.Sub(r.bucketTime) / r.width)
	if steps <= 0 {
		return
	}
	if steps >= budgetBuckets {
		r.buckets = [budgetBuckets]struct{ in, out int64 }{}
		r.bucketTime = now
		return
	}
	for range steps {
		r.cur = (r.cur + 1) % budgetBuckets
		r.buckets[r.cur] = struct{ in, out int64 }{}
	}
	r.bucketTime = r.bucketTime.Add(time.Duration(steps) * r.width)
}
