package upstream

import (
	"math"
	"sync"
)

// Priorities of a Call: 0 is the most important (P0). Values above
// LowestPriority count as LowestPriority.
const (
	HighestPriority = 0
	LowestPriority  = 2
	numPriorities   = LowestPriority + 1
)

func clampPriority(p int) int { return min(max(p, HighestPriority), LowestPriority) }

const budgetBuckets = 10

// reservePot is the index of the MinPerSecond reserve among a budget's pots.
const reservePot = numPriorities

// budgetBucket is one time bucket of a budget: milli-tokens deposited and
// withdrawn per pot (one per priority, then the reserve).
type budgetBucket struct{ in, out [numPriorities + 1]int64 }

// RetryBudget is a token retry budget in the style of Finagle's
// RetryBudget and Envoy's retry_budget: every request deposits Ratio
// tokens, every retry withdraws one whole token, deposits and withdrawals
// expire after TTL, and a reserve of MinPerSecond×TTL tokens is there too.
// So within any TTL window, retries ≤ Ratio × requests + MinPerSecond ×
// TTL: retries never amplify an overload beyond that fraction. Accounting
// is in integer milli-tokens, so it is exact (ten requests at Ratio 0.1 buy
// exactly one retry).
//
// Unless Shared, the budget is split by priority: a request deposits into
// its priority's pot, and a retry draws from its own pot first, then from
// the pots of less important priorities, then from the reserve. So a P0
// retry is never refused because P1 or P2 retries spent the budget: P0
// always has at least Ratio × its own recent requests, and may borrow what
// the others left. Shared puts every deposit and withdrawal in one pot.
type RetryBudget struct {
	clock   Clock
	deposit int64 // milli-tokens per request
	reserve int64 // milli-tokens of the reserve pot per window
	shared  bool

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
	return &RetryBudget{
		clock:   clock,
		deposit: int64(math.Round(cfg.Ratio * 1000)),
		reserve: int64(math.Floor(cfg.MinPerSecond * cfg.TTL.Seconds() * 1000)),
		shared:  cfg.Shared,
		ring:    newTimeRing[budgetBucket](budgetBuckets, cfg.TTL, clock.Now()),
	}
}

func (r *RetryBudget) pot(priority int) int {
	if r.shared {
		return LowestPriority
	}
	return clampPriority(priority)
}

// Deposit records one request of the given priority.
func (r *RetryBudget) Deposit(priority int) {
	r.mu.Lock()
	r.ring.at(r.clock.Now()).in[r.pot(priority)] += r.deposit
	r.mu.Unlock()
}

// TryWithdraw takes one token for a retry of the given priority and
// reports whether there was one. It never blocks.
func (r *RetryBudget) TryWithdraw(priority int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.ring.at(r.clock.Now())
	bal := r.balancesLocked()
	for p := r.pot(priority); p <= reservePot; p++ {
		if bal[p] >= 1000 {
			cur.out[p] += 1000
			return true
		}
	}
	return false
}

// Balance reports the whole tokens available now to a retry of the given
// priority.
func (r *RetryBudget) Balance(priority int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring.roll(r.clock.Now())
	bal := r.balancesLocked()
	var t int64
	for p := r.pot(priority); p <= reservePot; p++ {
		t += max(0, bal[p])
	}
	return int(t / 1000)
}

// balancesLocked returns every pot's balance in milli-tokens; mu held.
func (r *RetryBudget) balancesLocked() [numPriorities + 1]int64 {
	var bal [numPriorities + 1]int64
	bal[reservePot] = r.reserve
	for i := range r.ring.buckets {
		b := &r.ring.buckets[i]
		for p := range bal {
			bal[p] += b.in[p] - b.out[p]
		}
	}
	return bal
}
