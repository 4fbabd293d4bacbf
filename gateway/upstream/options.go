package upstream

import (
	"log/slog"
	"net/http"
	"time"
)

// Clock tells the time to breakers and retry budgets; tests inject a fake.
// Deadlines from a context are always compared with the real clock.
type Clock interface{ Now() time.Time }

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now calls f.
func (f ClockFunc) Now() time.Time { return f() }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// AfterFunc schedules f to run once after d in its own goroutine and
// returns a stop function that cancels it, reporting whether it did (like
// time.AfterFunc and Timer.Stop). Attempt timeouts and hedge delays use
// it; tests inject one they fire by hand.
type AfterFunc func(d time.Duration, f func()) (stop func() bool)

func realAfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Option configures a Pool in New.
type Option func(*Pool)

// WithTransport replaces the pool's tuned transport (tests, benchmarks).
// The pool closes idle connections of an *http.Transport on Close.
func WithTransport(rt http.RoundTripper) Option { return func(p *Pool) { p.rt = rt } }

// WithClock sets the clock used by breakers and the retry budget.
func WithClock(c Clock) Option { return func(p *Pool) { p.clock = c } }

// WithLogger sets the logger for node state changes. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(p *Pool) { p.log = l } }

// WithBalancer replaces the least-outstanding balancer.
func WithBalancer(b Balancer) Option { return func(p *Pool) { p.bal = b } }

// WithAfterFunc sets the timer scheduler of attempt timeouts and hedge
// delays (default time.AfterFunc).
func WithAfterFunc(af AfterFunc) Option { return func(p *Pool) { p.after = af } }
