package upstream

import "errors"

var (
	// ErrNoNode: no node is both healthy and admitted by its breaker. When
	// the breakers are to blame the error also matches ErrBreakerOpen.
	ErrNoNode = errors.New("upstream: no healthy node available")
	// ErrDeadline: the caller's remaining deadline is below MinServiceTime
	// (or already past), so no call was made.
	ErrDeadline = errors.New("upstream: remaining deadline too short for a call")
	// ErrBreakerOpen: every healthy node's breaker refuses calls.
	ErrBreakerOpen = errors.New("upstream: circuit breaker open")
	// ErrConn wraps connection-level failures (dial refused, reset, EOF
	// before the first byte of the answer).
	ErrConn = errors.New("upstream: connection failure")
	// ErrAttemptTimeout: the attempt timeout abandoned the last attempt
	// (its node took far longer than it usually does).
	ErrAttemptTimeout = errors.New("upstream: attempt timed out")
	// ErrAttemptPanic: the last attempt's goroutine panicked (a bug in the
	// gateway or its transport, not the node's failure: it is logged with
	// its stack and counted in levee_upstream_attempt_panics_total).
	ErrAttemptPanic = errors.New("upstream: attempt panicked")
)
