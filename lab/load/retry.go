package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// What a RetryPolicy may retry (RetryPolicy.On).
const (
	RetryOnTimeout = "timeout" // the client's deadline passed, or the gateway answered 504
	RetryOn5xx     = "5xx"     // any other 5xx answer: errors, and sheds answered 503
	RetryOn429     = "429"     // a 429: rate limited, or shed at yellow
	RetryOnError   = "error"   // no answer: refused, reset, malformed
)

// RetryOnAll lists the RetryPolicy.On values.
var RetryOnAll = []string{RetryOnTimeout, RetryOn5xx, RetryOn429, RetryOnError}

// retryBudgetWindow is how far back a retry budget counts requests and
// retries (Finagle's RetryBudget keeps deposits for 10 s too).
const retryBudgetWindow = 10 * time.Second

// RetryPolicy is the client's retry policy, as SDKs and load-test scripts
// write it: an attempt whose result is listed in On is sent again after a
// backoff, up to Attempts attempts in all. The zero value never retries.
//
// Accounting stays exact: offered counts arrivals (original requests),
// each ends in exactly one outcome — its last attempt's — and attempts,
// retries and retries the budget refused are counted on their own.
// Latency runs from the arrival's intended time to the last attempt's end.
type RetryPolicy struct {
	// Attempts is the most attempts per request, the first included;
	// ≤ 1 never retries. At most 10.
	Attempts int `yaml:"attempts" json:"attempts"`
	// On lists what is retried (RetryOnAll). Empty: timeout and 5xx.
	On []string `yaml:"on" json:"on,omitempty"`
	// Backoff is the wait before the first retry; each further retry waits
	// twice as long, at most MaxBackoff, with full jitter (a uniform draw
	// from zero to that), as AWS's and gRPC's clients do. 0: retry at once.
	Backoff    time.Duration `yaml:"backoff" json:"backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff" json:"max_backoff"` // default 10 × Backoff
	// Budget, when > 0, caps retries at this share of the requests sent
	// over the last 10 s, plus BudgetMinPerSecond × 10 s (a reserve for
	// light traffic) — Finagle's RetryBudget, gRPC's retry throttling. A
	// retry over budget is not sent: the request ends with the attempt it
	// has. 0: no budget.
	Budget             float64 `yaml:"budget" json:"budget"`
	BudgetMinPerSecond float64 `yaml:"budget_min_per_second" json:"budget_min_per_second"`
}

// Enabled reports whether p retries at all.
func (p RetryPolicy) Enabled() bool { return p.Attempts > 1 }

// Validate reports the first thing wrong with p, naming the field.
func (p RetryPolicy) Validate() error {
	switch {
	case p.Attempts < 0 || p.Attempts > 10:
		return fmt.Errorf("load: retry.attempts: want 0..10, got %d", p.Attempts)
	case p.Backoff < 0:
		return fmt.Errorf("load: retry.backoff: must be ≥ 0, got %v", p.Backoff)
	case p.MaxBackoff < 0:
		return fmt.Errorf("load: retry.max_backoff: must be ≥ 0, got %v", p.MaxBackoff)
	case math.IsNaN(p.Budget) || p.Budget < 0 || p.Budget > 1:
		return fmt.Errorf("load: retry.budget: want a share in [0, 1], got %v", p.Budget)
	case math.IsNaN(p.BudgetMinPerSecond) || p.BudgetMinPerSecond < 0 || math.IsInf(p.BudgetMinPerSecond, 0):
		return fmt.Errorf("load: retry.budget_min_per_second: must be ≥ 0, got %v", p.BudgetMinPerSecond)
	}
	for _, o := range p.On {
		if !slices.Contains(RetryOnAll, o) {
			return fmt.Errorf("load: retry.on: %q is not one of %v", o, RetryOnAll)
		}
	}
	return nil
}

// retries reports whether an attempt that ended in o with HTTP status
// (0: no answer) is one p retries.
func (p RetryPolicy) retries(o wire.Outcome, status int) bool {
	on := p.On
	if len(on) == 0 {
		on = []string{RetryOnTimeout, RetryOn5xx}
	}
	var class string
	switch {
	case o == wire.OutcomeTimeout:
		class = RetryOnTimeout
	case status == http.StatusTooManyRequests:
		class = RetryOn429
	case status >= 500:
		class = RetryOn5xx
	case status == 0 && o == wire.OutcomeError:
		class = RetryOnError
	default:
		return false // an answer: ok, fallback, or a 4xx that will not change
	}
	return slices.Contains(on, class)
}

// backoff is the wait before retry n (1 for the first), drawn by rnd.
func (p RetryPolicy) backoff(n int, rnd func() float64) time.Duration {
	if p.Backoff <= 0 {
		return 0
	}
	ceil := p.MaxBackoff
	if ceil <= 0 {
		ceil = 10 * p.Backoff
	}
	d := p.Backoff << min(n-1, 30)
	if d <= 0 || d > ceil {
		d = ceil
	}
	return time.Duration(rnd() * float64(d))
}

// retryBudget counts requests and retries per second over the last
// retryBudgetWindow on the generator's clock. Safe for concurrent use.
type retryBudget struct {
	ratio, minPerSec float64

	mu       sync.Mutex
	requests [10]float64 // guarded by mu; per second, ring
	retries  [10]float64 // guarded by mu
	sec      int64       // guarded by mu: the second the ring's newest slot holds
}

func newRetryBudget(p RetryPolicy) *retryBudget {
	return &retryBudget{ratio: p.Budget, minPerSec: p.BudgetMinPerSecond}
}

// roll moves the ring to now's second, emptying the slots it passes.
func (b *retryBudget) roll(now time.Time) int {
	s := now.Unix()
	if b.sec == 0 || s-b.sec >= int64(len(b.requests)) {
		b.requests, b.retries = [10]float64{}, [10]float64{}
	} else {
		for t := b.sec + 1; t <= s; t++ {
			b.requests[t%10], b.retries[t%10] = 0, 0
		}
	}
	if s > b.sec {
		b.sec = s
	}
	return int(s % 10)
}

// request counts an original request sent at now.
func (b *retryBudget) request(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests[b.roll(now)]++
}

// withdraw takes a retry from the budget at now; false when it is spent.
func (b *retryBudget) withdraw(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.roll(now)
	var req, ret float64
	for k := range b.requests {
		req += b.requests[k]
		ret += b.retries[k]
	}
	if ret+1 > b.ratio*req+b.minPerSec*retryBudgetWindow.Seconds() {
		return false
	}
	b.retries[i]++
	return true
}

// jitter is a seeded source of uniform draws in [0, 1) shared by the
// requests' goroutines.
type jitter struct {
	mu  sync.Mutex
	rnd *rand.Rand
}

func newJitter(seed int64) *jitter {
	return &jitter{rnd: rand.New(rand.NewPCG(uint64(seed), 0x5ee3_7e71))}
}

func (j *jitter) float() float64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rnd.Float64()
}
