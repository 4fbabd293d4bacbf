package gateway

import (
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Retry-After of the 503 sheds (the 429s are the rate limit's, which its
// bucket computes, and the guard's): what the gateway measured, not a
// constant. A queue shed says how long a request that entered the class's
// queue recently waited to leave it (with a slot, or at its
// queue_timeout): a client retrying sooner would find the queue as it
// left it. A budget shed says how long a reservation of the token budget
// recently stayed held: the budget frees as the requests holding it end.
// An overload shed says how long the guard's shed level needs to fall
// below the request's priority at its fastest (admit.Guard.RetryAfter).

// durationEWMA is an exponentially weighted mean of durations, each new
// one weighing ewmaWeight. Safe for concurrent use; it never blocks.
type durationEWMA struct {
	bits atomic.Uint64 // math.Float64bits of the mean in ns; 0: no sample yet
}

// ewmaWeight is the newest sample's weight: the mean follows a change
// within about ten requests.
const ewmaWeight = 0.125

// observe adds d (negative counts as 0).
func (e *durationEWMA) observe(d time.Duration) {
	v := float64(max(d, 0))
	for {
		old := e.bits.Load()
		next := v
		if old != 0 {
			m := math.Float64frombits(old)
			next = m + ewmaWeight*(v-m)
		}
		if next == 0 {
			next = math.SmallestNonzeroFloat64 // a sample of 0 is still a sample
		}
		if e.bits.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// mean returns the mean and whether there was a sample.
func (e *durationEWMA) mean() (time.Duration, bool) {
	b := e.bits.Load()
	if b == 0 {
		return 0, false
	}
	return time.Duration(math.Float64frombits(b)), true
}

// retryAfterSeconds is d as an RFC 9110 delay-seconds: whole seconds,
// rounded up, at least 1 (and at most a day: a measurement gone wild must
// not tell clients to go away for good).
func retryAfterSeconds(d time.Duration) int {
	s := math.Ceil(d.Seconds())
	return int(min(max(s, 1), 86400))
}

// retryAfterOf is the Retry-After of measurement e: its mean, or 1 s
// before the first sample.
func retryAfterOf(e *durationEWMA) int {
	d, _ := e.mean()
	return retryAfterSeconds(d)
}

// upstreamRetryAfter reads a model's Retry-After header h, received at
// now: delay-seconds or an HTTP-date (RFC 9110), at most a day. 0 when
// absent, malformed or already past. A model that says when it has room
// again (OpenAI's and a proxy's 429, a server's 503) is passed on to the
// client with the gateway's 502, so an SDK that honours it (openai-python,
// openai-node) waits that long instead of retrying at once into the same
// refusal.
func upstreamRetryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		d = time.Duration(min(n, 86400)) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 24*time.Hour)
}
