package admit

import (
	"context"
	"github.com/levee-lab/levee/internal/allocs"
	"math"
	"strings"
	"testing"
	"time"
)

func TestLimiterConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   LimiterConfig
		field string // "" means valid
	}{
		{"static", LimiterConfig{Algorithm: AlgoStatic, Limit: 10}, ""},
		{"static ignores adaptive knobs", LimiterConfig{Algorithm: AlgoStatic, Limit: 10, Min: 50}, ""},
		{"aimd defaults", LimiterConfig{Algorithm: AlgoAIMD, Limit: 48}, ""},
		{"gradient full", LimiterConfig{Algorithm: AlgoGradient, Limit: 48, Min: 4, Max: 256, Trim: 0.25, TimeoutMs: 5000}, ""},
		{"missing algorithm", LimiterConfig{Limit: 10}, "algorithm"},
		{"unknown algorithm", LimiterConfig{Algorithm: "vegas", Limit: 10}, "algorithm"},
		{"zero limit", LimiterConfig{Algorithm: AlgoStatic}, "limit"},
		{"negative limit", LimiterConfig{Algorithm: AlgoAIMD, Limit: -4}, "limit"},
		{"min above limit", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Min: 20}, "min"},
		{"negative min", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Min: -1}, "min"},
		{"max below limit", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Max: 5}, "max"},
		{"negative max", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Max: -5}, "max"},
		{"backoff 1", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Backoff: 1}, "backoff"},
		{"backoff negative", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Backoff: -0.5}, "backoff"},
		{"backoff NaN", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Backoff: math.NaN()}, "backoff"},
		{"negative timeout", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, TimeoutMs: -1}, "timeout_ms"},
		{"trim 1", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Trim: 1}, "trim"},
		{"trim NaN", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Trim: math.NaN()}, "trim"},
		{"trim negative", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Trim: -0.1}, "trim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := NewLimiter(tt.cfg)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("NewLimiter = %v", err)
				}
				if got := l.Limit(); got != tt.cfg.Limit {
					t.Fatalf("initial Limit() = %d, want the configured %d", got, tt.cfg.Limit)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "field "+tt.field) {
				t.Fatalf("NewLimiter = %v, want an error naming field %q", err, tt.field)
			}
		})
	}
}

func TestStaticAndLimiterFunc(t *testing.T) {
	s := NewStatic(7)
	s.OnSample(Sample{RTT: time.Hour, Inflight: 100, Dropped: true})
	if s.Limit() != 7 {
		t.Fatalf("static limit moved to %d", s.Limit())
	}
	s.Set(0)
	if s.Limit() != 1 {
		t.Fatalf("Set(0) gave %d, want 1", s.Limit())
	}
	n := 3
	var l Limiter = LimiterFunc(func() int { return n })
	l.OnSample(Sample{RTT: time.Second, Inflight: 1, Dropped: true})
	n = 9
	if l.Limit() != 9 {
		t.Fatalf("LimiterFunc.Limit() = %d, want 9", l.Limit())
	}
}

// TestTrimmedMean: the mean of the fastest share, with requests not back
// counted as the slowest; its standard error from the winsorized
// deviation.
func TestTrimmedMean(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 100, 7, 6}
	mean, sw, div, cut, _ := trimmedMean(xs, 0, 0.5)
	if mean != 2.5 || cut != 4 {
		t.Fatalf("fastest half of 1..7,100: mean %v cut %v, want 2.5 and 4", mean, cut)
	}
	if sw <= 0 || div <= 0 {
		t.Fatalf("sw %v div %v", sw, div)
	}
	// Four not back yet: they are slower than all eight, so the fastest
	// half of twelve is the six fastest of the eight.
	xs = []float64{5, 1, 4, 2, 3, 100, 7, 6}
	if mean, _, _, cut, _ := trimmedMean(xs, 4, 0.5); mean != 3.5 || cut != 6 {
		t.Fatalf("with 4 pending: mean %v cut %v, want 3.5 and 6", mean, cut)
	}
	// Dropped samples (+Inf) sort last; a statistic that would keep one
	// is +Inf.
	if mean, _, _, _, _ := trimmedMean([]float64{math.Inf(1), math.Inf(1), 1}, 0, 0.5); !math.IsInf(mean, 1) {
		t.Fatalf("mostly dropped: %v, want +Inf", mean)
	}
	if mean, _, _, _, _ := trimmedMean(nil, 0, 0.5); mean != 0 {
		t.Fatalf("empty: %v", mean)
	}
}

// fakeClock is a settable clock for the adaptive limiters.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newAdaptiveForTest(t *testing.T, cfg LimiterConfig) (*adaptive, *fakeClock) {
	t.Helper()
	l, err := NewLimiter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := adaptiveOf(l)
	clk := &fakeClock{t: time.Unix(1000, 0)}
	a.now = clk.now
	return a, clk
}

// takeTickets admits n requests to a and returns their tickets.
func takeTickets(a *adaptive, n int) []uint64 {
	tickets := make([]uint64, n)
	for i := range tickets {
		tickets[i] = a.Ticket()
	}
	return tickets
}

// TestAdaptiveStartUpFindsCapacity: a start-up cohort admitted one by one
// up to an initial limit of 4× the capacity (C = 20): the first C found
// free slots, the rest waited (n − C) completions. The baseline comes from
// the tickets that read no higher than the first quarter, the queue from
// the upper half, and the limit goes to about the capacity at once.
func TestAdaptiveStartUpFindsCapacity(t *testing.T) {
	const c, service = 20, 100 * time.Millisecond
	a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: 4 * c, Max: 400})
	x := float64(c) / service.Seconds() // completions per second
	tickets := takeTickets(a, 4*c)
	for i, tk := range tickets {
		n := i + 1
		// A little spread (±5 %) so the statistic has a deviation.
		s := service.Seconds() * (1 + 0.05*math.Sin(float64(i)))
		wait := math.Max(0, float64(n-c)) / x
		clk.add(time.Duration(float64(time.Second) / x))
		a.OnSample(Sample{RTT: time.Duration((s + wait) * 1e9), Inflight: n, Ticket: tk})
	}
	if !a.started {
		t.Fatal("the start-up cohort was not judged after all its tickets came back")
	}
	if l := a.Limit(); l < c-2 || l > c+c/4 {
		t.Fatalf("after start-up Limit() = %d, want about the capacity %d", l, c)
	}
}

// TestAdaptiveRefusal: a drop that failed faster than the baseline is a
// refusal (429): the limit gets a ceiling one below the concurrency it
// happened at, which is also the safe level above which only P2 explores.
func TestAdaptiveRefusal(t *testing.T) {
	a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: 30, Max: 400})
	a.base = 0.1 // as if measured
	a.started = true
	tk := a.Ticket()
	clk.add(time.Millisecond)
	a.OnSample(Sample{RTT: time.Millisecond, Inflight: 25, Dropped: true, Ticket: tk})
	if a.Limit() != 24 || a.Safe() != 24 {
		t.Fatalf("after a refusal at 25 in flight: Limit %d Safe %d, want 24 and 24", a.Limit(), a.Safe())
	}
	// Two round trips at the ceiling without a refusal: it lifts by one,
	// counted in tickets (round trips at it), not in windows.
	for range 2 * 24 {
		tk := a.Ticket()
		clk.add(time.Millisecond)
		a.OnSample(Sample{RTT: 100 * time.Millisecond, Inflight: 24, Ticket: tk})
	}
	if a.Limit() != 25 || a.Safe() != 24 {
		t.Fatalf("two round trips after the refusal: Limit %d Safe %d, want 25 and 24", a.Limit(), a.Safe())
	}
	// A slow drop (a time-out) is no refusal.
	b, _ := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: 30})
	b.base, b.started = 0.1, true
	b.OnSample(Sample{RTT: time.Second, Inflight: 25, Dropped: true, Ticket: b.Ticket()})
	if b.Limit() != 30 || b.Safe() != 0 {
		t.Fatalf("after a time-out: Limit %d Safe %d, want 30 and 0", b.Limit(), b.Safe())
	}
}

// TestBulkheadSafeLevel: while P0 and P1 hold the limiter's safe level's
// places, only P2 is admitted above it (it may be refused), even while P0
// and P1 wait for a place below it.
func TestBulkheadSafeLevel(t *testing.T) {
	b := safeLevelBulkhead(t)
	ctx := context.Background()
	held := acquireN(t, b, 2, P0)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(short, P0); err == nil {
		t.Fatal("P0 admitted above the safe level")
	}
	// A P0 waits for a place below the safe level; a P2 arriving behind
	// it takes a place above, which the P0 may not.
	waited := make(chan error, 1)
	go func() {
		p, err := b.Acquire(ctx, P0)
		if err == nil {
			p.Release(Sample{})
		}
		waited <- err
	}()
	waitQueued(t, b, [NumPriorities]int{1, 0, 0})
	short2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	p2, err := b.Acquire(short2, P2)
	if err != nil {
		t.Fatalf("P2 above the safe level, behind a waiting P0: %v", err)
	}
	p2.Release(Sample{})
	for i := range held {
		held[i].Release(Sample{})
	}
	if err := <-waited; err != nil {
		t.Fatalf("the waiting P0: %v", err)
	}
}

// TestBulkheadSafeLevelNoStarvation: P2 explorers that hold the places
// above the safe level do not starve a waiting P0: a freed place goes to
// the P0 (fewer than the safe level of P0 and P1 are in flight), not to
// the P2 waiting beside it.
func TestBulkheadSafeLevelNoStarvation(t *testing.T) {
	b := safeLevelBulkhead(t)
	ctx := context.Background()
	held := acquireN(t, b, 4, P2) // two below the safe level, two exploring above it
	got := make(chan Priority, 2)
	for _, p := range []Priority{P2, P0} {
		go func() {
			pm, err := b.Acquire(ctx, p)
			if err != nil {
				t.Error(err)
				return
			}
			got <- p
			pm.Release(Sample{})
		}()
		want := [NumPriorities]int{}
		want[P2] = 1
		if p == P0 {
			want[P0] = 1
		}
		waitQueued(t, b, want)
	}
	held[0].Release(Sample{}) // three in flight: above the safe level
	if p := <-got; p != P0 {
		t.Fatalf("a place above the safe level, no P0 or P1 in flight, went to %v before the waiting P0", p)
	}
	for _, p := range held[1:] {
		p.Release(Sample{})
	}
	if p := <-got; p != P2 {
		t.Fatalf("second grant %v, want the P2", p)
	}
}

// safeLevelBulkhead returns a bulkhead of limit 4 whose limiter's safe
// level is 2 (as after a refusal).
func safeLevelBulkhead(t *testing.T) *Bulkhead {
	t.Helper()
	b, err := NewBulkhead("ai", BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoGradient, Limit: 4}, QueueSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	adaptiveOf(b.Limiter()).safe.Store(2)
	return b
}

// acquireN acquires n places of priority p at once.
func acquireN(t *testing.T, b *Bulkhead, n int, p Priority) []Permit {
	t.Helper()
	var held []Permit
	for range n {
		pm, err := b.Acquire(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, pm)
	}
	return held
}

// TestAdaptiveOnLatency: a stream's time to first token judges its cohort
// before the stream ends (the release then only counts it out).
func TestAdaptiveOnLatency(t *testing.T) {
	a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: 8})
	tickets := takeTickets(a, 8)
	for i, tk := range tickets {
		clk.add(10 * time.Millisecond)
		a.OnLatency(tk, i+1, 50*time.Millisecond)
	}
	if !a.started || a.base == 0 {
		t.Fatalf("the start-up cohort was not judged on first tokens (started %v base %v)", a.started, a.base)
	}
	base := a.base
	for i, tk := range tickets { // the streams end much later
		a.OnSample(Sample{RTT: 20 * time.Second, Latency: 50 * time.Millisecond, Inflight: i + 1, Ticket: tk})
	}
	if a.base != base {
		t.Fatalf("the releases moved the baseline %v → %v", base, a.base)
	}
}

// TestAdaptiveDoesNotAllocate: tickets and samples allocate nothing.
func TestAdaptiveDoesNotAllocate(t *testing.T) {
	a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: 64})
	n := 0
	if n := allocs.Total(5000, func() {
		tk := a.Ticket()
		clk.add(time.Millisecond)
		n++
		a.OnSample(Sample{RTT: time.Duration(50+n%17) * time.Millisecond, Inflight: 64, Ticket: tk})
	}); n != 0 {
		t.Fatalf("%d allocations in 5,000 Ticket + OnSample, want 0", n)
	}
}
