package upstream

import (
	"math"
	"sync"

	"github.com/levee-lab/levee/internal/wire"
)

// Priorities of a Call: 0 is the most important (P0), the ranks of
// wire.Priorities(). Values above LowestPriority count as LowestPriority.
const (
	HighestPriority = 0
	LowestPriority  = wire.NumPriorities - 1
	numPriorities   = LowestPriority + 1
)

func clampPriority(p int) int { return min(max(p, HighestPriority), LowestPriority) }

const budgetBuckets = 10

// budgetBucket is one time bucket of a budget, in milli-tokens.
type budgetBucket struct{ in, out int64 }

// RetryBudget is a token retry budget in the style of Finagle's
// RetryBudget and Envoy's retry_budget: every request deposits Ratio
// tokens, every retry withdraws one whole token, deposits and withdrawals
// expire after TTL, and a reserve of MinPerSecond×TTL tokens is there too.
// So within any TTL window, retries ≤ Ratio × requests + MinPerSecond ×
// TTL: retries never amplify an overload beyond that fraction. Accounting
// is in integer milli-tokens, so it is exact (ten requests at Ratio 0.1 buy
// exactly one P0 retry).
//
// Unless Shared, a share P0Reserve of the budget is P0's: a retry of a
// lower priority is refused when it would leave fewer than P0Reserve × the
// budget's size (its deposits and reserve within TTL). So P1 and P2
// retries spend at most 1 − P0Reserve of the budget, and a P0 retry is
// never refused because they spent it: P0 may use every token left.
type RetryBudget struct {
	clock     Clock
	deposit   int64   // milli-tokens per request
	reserve   int64   // milli-tokens always there
	p0Reserve float64 // share of the budget lower priorities may not spend

	mu   sync.Mutex
	ring timeRing[budgetBucket] // guarded by mu
}

// NewRetryBudget returns a budget; zero fields of cfg take defaults, nil
// clock means the real clock.
func NewRetryBudget(cfg RetryBudgetConfig, clock Clock) *RetryBudget {
	if clock == nil {
		clock = realClock{}
	}
	cfg = cfg.WithDefaults()
	r := &RetryBudget{
		clock:     clock,
		deposit:   int64(math.Round(cfg.Ratio * 1000)),
		reserve:   int64(math.Floor(cfg.MinPerSecond * cfg.TTL.Seconds() * 1000)),
		p0Reserve: cfg.P0Reserve,
		ring:      newTimeRing[budgetBucket](budgetBuckets, cfg.TTL, clock.Now()),
	}
	if cfg.Shared {
		r.p0Reserve = 0
	}
	return r
}

// Deposit records one request.
func (r *RetryBudget) Deposit() {
	r.mu.Lock()
	r.ring.at(r.clock.Now()).in += r.deposit
	r.mu.Unlock()
}

// TryWithdraw takes one token for a retry of the given priority and
// reports whether there was one for it. It never blocks.
func (r *RetryBudget) TryWithdraw(priority int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.ring.at(r.clock.Now())
	if r.balanceLocked(priority) < 1000 {
		return false
	}
	cur.out += 1000
	return true
}

// Balance reports the whole tokens a retry of the given priority may
// take now.
func (r *RetryBudget) Balance(priority int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring.roll(r.clock.Now())
	return int(max(0, r.balanceLocked(priority)) / 1000)
}

// balanceLocked is the milli-tokens priority may take; mu held.
func (r *RetryBudget) balanceLocked(priority int) int64 {
	size, bal := r.reserve, r.reserve
	for _, b := range r.ring.buckets {
		size += b.in
		bal += b.in - b.out
	}
	if clampPriority(priority) != HighestPriority {
		bal -= int64(math.Ceil(r.p0Reserve * float64(size)))
	}
	return bal
}
