package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakePrimary is a remote store whose health the test switches. It answers
// "allowed, 99 remaining" when up, and fails (or blocks until ctx is done,
// when hang is set) when down.
type fakePrimary struct {
	mu    sync.Mutex
	down  bool // guarded by mu
	hang  bool // guarded by mu
	calls int  // guarded by mu
}

func (p *fakePrimary) set(down, hang bool) {
	p.mu.Lock()
	p.down, p.hang = down, hang
	p.mu.Unlock()
}

func (p *fakePrimary) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

func (p *fakePrimary) Allow(ctx context.Context, _ string, rule Rule, _ int64, _ time.Time) (Decision, error) {
	p.mu.Lock()
	p.calls++
	down, hang := p.down, p.hang
	p.mu.Unlock()
	if hang {
		<-ctx.Done()
		return Decision{}, ctx.Err()
	}
	if down {
		return Decision{}, errors.New("connection refused")
	}
	return Decision{Allowed: true, Remaining: 99, Limit: rule.Capacity()}, nil
}

// fakeClock is a manual clock for the breaker.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var swRule = Rule{Algorithm: SlidingWindow, Limit: 9, Window: time.Minute}

func newTestFailover(t *testing.T, p Store, opts ...FailoverOption) (*Failover, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	f, err := NewFailover(p, append([]FailoverOption{failoverClock(clk.Now), FailoverBreaker(3, time.Second), FailoverBreakerSpan(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return f, clk
}

func allow(t *testing.T, f *Failover, now time.Time) Decision {
	t.Helper()
	d, err := f.Allow(context.Background(), "tenant:ai", swRule, 1, now)
	if err != nil {
		t.Fatalf("Allow returned an error: %v", err)
	}
	return d
}

func TestFailoverBreaker(t *testing.T) {
	p := &fakePrimary{}
	f, clk := newTestFailover(t, p, FailoverShare(1.0/3))
	now := clk.Now()

	// A window ago: the local share, which counts Redis's admissions too,
	// has forgotten it by now.
	if d := allow(t, f, now.Add(-swRule.Window)); d.Remaining != 99 || f.State() != BreakerClosed {
		t.Fatalf("healthy: %+v state %v, want the primary's decision", d, f.State())
	}

	p.set(true, false)
	for i := 0; i < 3; i++ {
		d := allow(t, f, now)
		// Local share of 9 is 3: remaining 2, 1, 0.
		if !d.Allowed || d.Limit != 3 || d.Remaining != int64(2-i) {
			t.Fatalf("fallback %d: %+v, want the local share (limit 3)", i, d)
		}
	}
	if f.State() != BreakerOpen {
		t.Fatalf("after 3 failures: state %v, want open", f.State())
	}
	calls := p.Calls()
	if d := allow(t, f, now); d.Allowed || d.RetryAfter <= 0 {
		t.Fatalf("local share used up: %+v, want denied", d)
	}
	if p.Calls() != calls {
		t.Fatal("an open breaker still called the primary")
	}
	if got := f.Fallbacks(); got != 4 {
		t.Fatalf("Fallbacks() = %d, want 4", got)
	}

	// The probe is due after 1 s; it fails: open again, one call made.
	clk.Advance(time.Second)
	allow(t, f, now)
	if p.Calls() != calls+1 || f.State() != BreakerOpen {
		t.Fatalf("failed probe: calls %d state %v, want %d open", p.Calls(), f.State(), calls+1)
	}
	allow(t, f, now)
	if p.Calls() != calls+1 {
		t.Fatal("called the primary again before the next probe was due")
	}

	// Redis is back: the next probe closes the breaker.
	p.set(false, false)
	clk.Advance(time.Second)
	if d := allow(t, f, now); d.Remaining != 99 || f.State() != BreakerClosed {
		t.Fatalf("successful probe: %+v state %v, want primary decision and closed", d, f.State())
	}
	// For one window after the last local decision an admission needs
	// room in the local share too (Redis never saw the local ones): the
	// share is used up, so this one is denied without asking Redis.
	calls = p.Calls()
	if d := allow(t, f, now); d.Allowed || p.Calls() != calls {
		t.Fatalf("within a window of the outage: %+v (calls %d → %d), want the local share's denial", d, calls, p.Calls())
	}
	clk.Advance(swRule.Window)
	if d := allow(t, f, now.Add(swRule.Window)); d.Remaining != 99 {
		t.Fatalf("a window after the outage: %+v, want the primary's decision", d)
	}
	if got, want := f.RemoteDecisions(), uint64(3); got != want {
		t.Errorf("RemoteDecisions() = %d, want %d", got, want)
	}
}

func TestFailoverBreakerSpan(t *testing.T) {
	p := &fakePrimary{}
	p.set(true, false)
	f, clk := newTestFailover(t, p, FailoverBreakerSpan(50*time.Millisecond))
	// A limit the local share never reaches here: every call asks the
	// primary (a local share used up would deny without asking).
	big := Rule{Algorithm: SlidingWindow, Limit: 1000, Window: time.Minute}
	allow := func(t *testing.T, f *Failover, now time.Time) {
		t.Helper()
		if _, err := f.Allow(context.Background(), "tenant:ai", big, 1, now); err != nil {
			t.Fatal(err)
		}
	}
	// A burst: many failures at one instant (a stall of this process).
	for i := 0; i < 10; i++ {
		allow(t, f, clk.Now())
	}
	if f.State() != BreakerClosed {
		t.Fatalf("a burst of failures at one instant opened the breaker")
	}
	if p.Calls() != 10 || f.Fallbacks() != 10 {
		t.Fatalf("calls %d fallbacks %d, want 10 and 10", p.Calls(), f.Fallbacks())
	}
	// The streak goes on: once it has lasted 50 ms, the breaker opens.
	clk.Advance(49 * time.Millisecond)
	allow(t, f, clk.Now())
	if f.State() != BreakerClosed {
		t.Fatal("opened before the span")
	}
	clk.Advance(time.Millisecond)
	allow(t, f, clk.Now())
	if f.State() != BreakerOpen {
		t.Fatalf("state %v after a 50 ms streak, want open", f.State())
	}
	// A success ends the streak: the span counts from the next failure.
	p.set(false, false)
	clk.Advance(time.Second)
	allow(t, f, clk.Now()) // probe succeeds
	p.set(true, false)
	for i := 0; i < 5; i++ {
		allow(t, f, clk.Now())
	}
	if f.State() != BreakerClosed {
		t.Fatal("a new burst opened the breaker: the span did not restart")
	}
}

func TestFailoverSuccessResetsFailureCount(t *testing.T) {
	p := &fakePrimary{}
	f, clk := newTestFailover(t, p)
	for i := 0; i < 10; i++ {
		p.set(i%3 == 2, false) // fail every third call: never 3 in a row
		allow(t, f, clk.Now())
	}
	if f.State() != BreakerClosed {
		t.Fatalf("state %v after scattered failures, want closed", f.State())
	}
}

// TestFailoverTimeout: a primary that hangs is given up after
// FailoverTimeout (the decision falls back to the local store); three
// such timeouts open the breaker, and an open breaker does not call the
// primary at all, so no decision waits for its deadline.
func TestFailoverTimeout(t *testing.T) {
	p := &fakePrimary{}
	p.set(false, true) // hangs until the context ends
	f, clk := newTestFailover(t, p, FailoverTimeout(5*time.Millisecond))
	// The caller's context has no deadline: only FailoverTimeout ends a
	// call. Without it the calls hang, and the 30 s below fail the test.
	type result struct {
		d   Decision
		err error
	}
	res := make(chan result, 3)
	go func() {
		for range 3 {
			d, err := f.Allow(context.Background(), "tenant:ai", swRule, 1, clk.Now())
			res <- result{d, err}
		}
	}()
	for i := range 3 {
		select {
		case r := <-res:
			if r.err != nil || !r.d.Allowed {
				t.Fatalf("call %d: %+v %v, want a local allow", i, r.d, r.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("call %d to a hung primary not given up: FailoverTimeout (5 ms) was not applied", i)
		}
	}
	if f.State() != BreakerOpen {
		t.Fatalf("state %v after 3 timeouts, want open", f.State())
	}
	// Open: decisions are local, the primary is not called (nor waited for).
	for i := 0; i < 100; i++ {
		allow(t, f, clk.Now())
	}
	if n := p.Calls(); n != 3 {
		t.Fatalf("the primary was called %d times, want 3: an open breaker still sends decisions to it", n)
	}
	if f.Fallbacks() != 103 {
		t.Fatalf("Fallbacks() = %d, want 103", f.Fallbacks())
	}
}

func TestFailoverFailClosed(t *testing.T) {
	p := &fakePrimary{}
	p.set(true, false)
	f, clk := newTestFailover(t, p, FailoverFailClosed(true))
	d := allow(t, f, clk.Now())
	if d.Allowed || d.Remaining != 0 || d.Limit != 9 || d.RetryAfter != time.Second || !d.Unavailable {
		t.Fatalf("fail-closed while closed: %+v, want denied, Unavailable, with RetryAfter = probe interval 1s", d)
	}
	allow(t, f, clk.Now())
	allow(t, f, clk.Now()) // opens
	clk.Advance(300 * time.Millisecond)
	if d := allow(t, f, clk.Now()); d.Allowed || d.RetryAfter != 700*time.Millisecond || !d.Unavailable {
		t.Fatalf("fail-closed while open: %+v, want Unavailable, RetryAfter 700ms (until the probe)", d)
	}
	p.set(false, false)
	clk.Advance(time.Second)
	if d := allow(t, f, clk.Now()); !d.Allowed || d.Unavailable {
		t.Fatalf("store back: %+v, want allowed by the store", d)
	}
}

// TestFailoverLogsTransitions: the breaker's opening is one warning naming
// the store and the error, its closing one info line; the decisions in
// between, fallbacks and failed probes, log nothing.
func TestFailoverLogsTransitions(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := &fakePrimary{}
	f, clk := newTestFailover(t, p, FailoverLogger(log), FailoverName("redis"))
	allow(t, f, clk.Now())
	p.set(true, false)
	for range 10 {
		allow(t, f, clk.Now()) // 3 failures open the breaker; the rest fall back at once
	}
	clk.Advance(time.Second)
	allow(t, f, clk.Now()) // a failed probe
	p.set(false, false)
	clk.Advance(2 * time.Second)
	allow(t, f, clk.Now()) // the probe that closes it
	allow(t, f, clk.Now())
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want 2 (opened, closed):\n%s", len(lines), out)
	}
	for _, want := range []string{"level=WARN", "store=redis", "connection refused", "fail open"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("opening line %q lacks %q", lines[0], want)
		}
	}
	for _, want := range []string{"level=INFO", "store back", "down=3s"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("closing line %q lacks %q", lines[1], want)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestFailoverCallerErrorsPassThrough(t *testing.T) {
	p := &fakePrimary{}
	p.set(true, false)
	f, clk := newTestFailover(t, p)
	tests := []struct {
		name string
		ctx  func() context.Context
		rule Rule
		cost int64
		want error
		text string
	}{
		{"cost above capacity", context.Background, swRule, 10, ErrCostExceedsCapacity, "capacity"},
		{"bad rule", context.Background, Rule{}, 1, nil, "algorithm"},
		{"bad cost", context.Background, swRule, -1, nil, "cost -1"},
		{"caller cancelled", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, swRule, 1, context.Canceled, "canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.Allow(tt.ctx(), "k", tt.rule, tt.cost, clk.Now())
			if err == nil || !strings.Contains(err.Error(), tt.text) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("err %v, want %v containing %q", err, tt.want, tt.text)
			}
		})
	}
	if f.Fallbacks() != 0 || p.Calls() != 0 || f.State() != BreakerClosed {
		t.Fatalf("caller errors touched the store: fallbacks %d calls %d state %v", f.Fallbacks(), p.Calls(), f.State())
	}
}

func TestFailoverOnlyOneProbeAtATime(t *testing.T) {
	p := &fakePrimary{}
	p.set(false, true)
	f, clk := newTestFailover(t, p, FailoverTimeout(200*time.Millisecond))
	for i := 0; i < 3; i++ {
		allow(t, f, clk.Now())
	}
	clk.Advance(time.Second)
	calls := p.Calls()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			allow(t, f, clk.Now())
		}()
	}
	wg.Wait()
	if got := p.Calls() - calls; got != 1 {
		t.Fatalf("%d concurrent calls reached the primary while half-open, want 1 probe", got)
	}
}

func TestFailoverOptions(t *testing.T) {
	p := &fakePrimary{}
	tests := []struct {
		name string
		opt  FailoverOption
		want string
	}{
		{"zero timeout", FailoverTimeout(0), "timeout"},
		{"share 0", FailoverShare(0), "share"},
		{"share above 1", FailoverShare(1.5), "share"},
		{"no failures", FailoverBreaker(0, time.Second), "failures"},
		{"no probe interval", FailoverBreaker(3, 0), "probe"},
		{"negative span", FailoverBreakerSpan(-time.Millisecond), "span"},
		{"empty name", FailoverName(""), "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewFailover(p, tt.opt); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := NewFailover(nil); err == nil {
		t.Fatal("NewFailover(nil) succeeded")
	}
}

func TestFailoverMetric(t *testing.T) {
	p := &fakePrimary{}
	p.set(true, false)
	f, clk := newTestFailover(t, p)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f.Collectors()...)
	for i := 0; i < 5; i++ {
		allow(t, f, clk.Now())
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "levee_ratelimit_store_fallback_total" || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, want one levee_ratelimit_store_fallback_total series", mfs)
	}
	m := mfs[0].GetMetric()[0]
	if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "store" || l[0].GetValue() != "redis" {
		t.Errorf("labels %v, want store=\"redis\"", l)
	}
	if v := m.GetCounter().GetValue(); v != 5 {
		t.Errorf("counter %v, want 5", v)
	}
}

// shardedPrimary is a remote store with one failure domain per key prefix
// ("a:…" on shard a, "b:…" on shard b); the test takes shards down.
type shardedPrimary struct {
	mu    sync.Mutex
	down  map[string]bool // guarded by mu
	calls map[string]int  // guarded by mu
}

func (p *shardedPrimary) Shard(key string) string { s, _, _ := strings.Cut(key, ":"); return s }

func (p *shardedPrimary) set(shard string, down bool) {
	p.mu.Lock()
	p.down[shard] = down
	p.mu.Unlock()
}

func (p *shardedPrimary) Allow(_ context.Context, key string, rule Rule, _ int64, _ time.Time) (Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.Shard(key)
	p.calls[s]++
	if p.down[s] {
		return Decision{}, errors.New("connection refused")
	}
	return Decision{Allowed: true, Remaining: 99, Limit: rule.Capacity()}, nil
}

// One lost shard (a cluster master) opens only its own breaker: the other
// shard's decisions stay remote, and each call is counted once, as a
// remote decision or a fallback.
func TestFailoverBreakerPerShard(t *testing.T) {
	p := &shardedPrimary{down: map[string]bool{}, calls: map[string]int{}}
	f, clk := newTestFailover(t, p)
	p.set("a", true)
	for i := 0; i < 10; i++ {
		for _, k := range []string{"a:t1", "b:t1", "a:t2"} {
			if _, err := f.Allow(context.Background(), k, swRule, 1, clk.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Shard a: 3 failures opened its breaker (threshold 3, span 0), then
	// no more calls; shard b: every call remote.
	if p.calls["a"] != 3 || p.calls["b"] != 10 {
		t.Fatalf("calls %v, want a:3 (then its breaker is open) b:10", p.calls)
	}
	if f.RemoteDecisions() != 10 || f.Fallbacks() != 20 {
		t.Fatalf("remote %d fallbacks %d, want 10 and 20", f.RemoteDecisions(), f.Fallbacks())
	}
	if f.State() != BreakerOpen {
		t.Fatalf("State %v with shard a open, want open (the worst shard)", f.State())
	}
	// Shard a returns; after the probe interval its probe closes it.
	p.set("a", false)
	clk.Advance(time.Second)
	if _, err := f.Allow(context.Background(), "a:t2", swRule, 1, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if f.State() != BreakerClosed || p.calls["a"] != 4 {
		t.Fatalf("after the probe: state %v, calls %v; want closed and a:4", f.State(), p.calls)
	}
}

// Trip with a sharded store opens every shard, including shards first seen
// after the trip, until the probe interval has passed.
func TestFailoverTripSharded(t *testing.T) {
	p := &shardedPrimary{down: map[string]bool{}, calls: map[string]int{}}
	f, clk := newTestFailover(t, p)
	f.Trip()
	if f.State() != BreakerOpen {
		t.Fatalf("State %v after Trip, want open", f.State())
	}
	if _, err := f.Allow(context.Background(), "a:t", swRule, 1, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if p.calls["a"] != 0 || f.Fallbacks() != 1 {
		t.Fatalf("calls %v fallbacks %d right after Trip, want none and 1", p.calls, f.Fallbacks())
	}
	clk.Advance(time.Second)
	for _, k := range []string{"a:t", "b:t"} {
		if _, err := f.Allow(context.Background(), k, swRule, 1, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if p.calls["a"] != 1 || p.calls["b"] != 1 || f.State() != BreakerClosed {
		t.Fatalf("calls %v state %v one interval after Trip, want a probe of a, a call to b, closed", p.calls, f.State())
	}
}
