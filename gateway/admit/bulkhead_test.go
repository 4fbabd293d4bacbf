package admit

import (
	"context"
	"errors"
	"github.com/levee-lab/levee/internal/allocs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newBH(t *testing.T, limit, queue int, timeout time.Duration) *Bulkhead {
	t.Helper()
	b, err := NewBulkhead("ai", BulkheadConfig{
		Limiter:      LimiterConfig{Algorithm: AlgoStatic, Limit: limit},
		QueueSize:    queue,
		QueueTimeout: timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitQueued waits until b holds depth waiters by priority.
func waitQueued(t *testing.T, b *Bulkhead, depth [NumPriorities]int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.Stats().QueueDepth != depth {
		if time.Now().After(deadline) {
			t.Fatalf("queue depth %v, want %v", b.Stats().QueueDepth, depth)
		}
		time.Sleep(time.Millisecond)
	}
}

type result struct {
	name   string
	permit Permit
	err    error
}

// enqueue starts a waiter and returns where its result arrives.
func enqueue(b *Bulkhead, ctx context.Context, name string, p Priority) <-chan result {
	ch := make(chan result, 1)
	go func() {
		pm, err := b.Acquire(ctx, p)
		ch <- result{name, pm, err}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no result within 5 s")
	}
	return result{}
}

func TestNewBulkheadBadConfig(t *testing.T) {
	tests := []struct {
		cfg   BulkheadConfig
		field string
	}{
		{BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoStatic}}, "limit"},
		{BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoStatic, Limit: 1}, QueueSize: -1}, "queue_size"},
		{BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoStatic, Limit: 1}, QueueTimeout: -time.Second}, "queue_timeout"},
		{BulkheadConfig{Limiter: LimiterConfig{Algorithm: "fifo", Limit: 1}}, "algorithm"},
	}
	for _, tt := range tests {
		if _, err := NewBulkhead("x", tt.cfg); err == nil || !strings.Contains(err.Error(), "field "+tt.field) || !strings.Contains(err.Error(), `"x"`) {
			t.Errorf("NewBulkhead(%+v) = %v, want an error naming the bulkhead and field %q", tt.cfg, err, tt.field)
		}
	}
	b := newBH(t, 1, 1, 0)
	if err := b.SetConfig(BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoStatic, Limit: 0}}); err == nil {
		t.Error("SetConfig accepted limit 0")
	}
	if _, err := b.Acquire(context.Background(), Priority(3)); err == nil {
		t.Error("Acquire accepted priority 3")
	}
}

func TestBulkheadImmediateAndFailFast(t *testing.T) {
	b := newBH(t, 2, 0, 0)
	ctx := context.Background()
	p1, err1 := b.Acquire(ctx, P2)
	p2, err2 := b.Acquire(ctx, P2)
	if err1 != nil || err2 != nil {
		t.Fatalf("under the limit: %v, %v", err1, err2)
	}
	if _, err := b.Acquire(ctx, P0); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("at the limit with no queue: %v, want ErrQueueFull", err)
	}
	if s := b.Stats(); s.Inflight != 2 || s.Limit != 2 || s.QueueSize != 0 || s.Name != "ai" || !s.Enabled {
		t.Fatalf("Stats() = %+v", s)
	}
	p1.Release(Sample{RTT: time.Millisecond})
	p1.Release(Sample{RTT: time.Millisecond}) // twice: harmless
	var zero Permit
	zero.Release(Sample{})
	if s := b.Stats(); s.Inflight != 1 {
		t.Fatalf("Inflight = %d after one release (twice), want 1", s.Inflight)
	}
	p2.Release(Sample{})
	if s := b.Stats(); s.Inflight != 0 {
		t.Fatalf("Inflight = %d, want 0", s.Inflight)
	}
}

// TestBulkheadPriorityOrder: released permits go to P0 first, then P1,
// then P2, oldest first within a priority.
func TestBulkheadPriorityOrder(t *testing.T) {
	b := newBH(t, 1, 10, 0)
	ctx := context.Background()
	hold, _ := b.Acquire(ctx, P0)
	var chans []<-chan result
	order := []struct {
		name string
		p    Priority
	}{{"a-P2", P2}, {"b-P1", P1}, {"c-P2", P2}, {"d-P0", P0}, {"e-P1", P1}}
	var depth [NumPriorities]int
	for _, o := range order {
		chans = append(chans, enqueue(b, ctx, o.name, o.p))
		depth[o.p]++
		waitQueued(t, b, depth) // enqueue in a known order
	}
	all := make(chan result, len(chans))
	for _, ch := range chans {
		go func(ch <-chan result) { all <- recv(t, ch) }(ch)
	}
	want := []string{"d-P0", "b-P1", "e-P1", "a-P2", "c-P2"}
	hold.Release(Sample{RTT: time.Millisecond})
	for _, w := range want {
		r := <-all
		if r.err != nil || r.name != w {
			t.Fatalf("granted %s (%v), want %s", r.name, r.err, w)
		}
		if s := b.Stats(); s.Inflight != 1 {
			t.Fatalf("Inflight = %d while one permit is held, want 1", s.Inflight)
		}
		r.permit.Release(Sample{RTT: time.Millisecond})
	}
	if s := b.Stats(); s.Inflight != 0 || s.Queued() != 0 {
		t.Fatalf("Stats() = %+v at the end", s)
	}
}

// TestBulkheadDisplacement: on a full queue an arrival displaces the newest
// waiter of the lowest priority below its own; otherwise it fails fast.
func TestBulkheadDisplacement(t *testing.T) {
	b := newBH(t, 1, 3, 0)
	ctx := context.Background()
	hold, _ := b.Acquire(ctx, P0)
	p2old := enqueue(b, ctx, "p2-old", P2)
	waitQueued(t, b, [3]int{0, 0, 1})
	p1 := enqueue(b, ctx, "p1", P1)
	waitQueued(t, b, [3]int{0, 1, 1})
	p2new := enqueue(b, ctx, "p2-new", P2)
	waitQueued(t, b, [3]int{0, 1, 2})

	// Full. A P2 arrival has nobody below it: fail fast.
	if _, err := b.Acquire(ctx, P2); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("P2 on a full queue: %v, want ErrQueueFull", err)
	}
	// A P0 arrival displaces the newest P2.
	p0a := enqueue(b, ctx, "p0-a", P0)
	if r := recv(t, p2new); !errors.Is(r.err, ErrQueueFull) {
		t.Fatalf("newest P2: %v, want ErrQueueFull (displaced)", r.err)
	}
	waitQueued(t, b, [3]int{1, 1, 1})
	// A P1 arrival displaces the remaining P2, not the P1.
	p1b := enqueue(b, ctx, "p1-b", P1)
	if r := recv(t, p2old); !errors.Is(r.err, ErrQueueFull) {
		t.Fatalf("old P2: %v, want ErrQueueFull (displaced)", r.err)
	}
	waitQueued(t, b, [3]int{1, 2, 0})
	// A P1 arrival cannot displace P1s or the P0.
	if _, err := b.Acquire(ctx, P1); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("P1 on a queue of P0/P1: %v, want ErrQueueFull", err)
	}
	// A P0 displaces the newest P1.
	p0b := enqueue(b, ctx, "p0-b", P0)
	if r := recv(t, p1b); !errors.Is(r.err, ErrQueueFull) {
		t.Fatalf("newest P1: %v, want ErrQueueFull", r.err)
	}
	waitQueued(t, b, [3]int{2, 1, 0})
	// Drain: p0-a, p0-b, p1.
	hold.Release(Sample{RTT: time.Millisecond})
	for _, ch := range []<-chan result{p0a, p0b, p1} {
		r := recv(t, ch)
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		r.permit.Release(Sample{RTT: time.Millisecond})
	}
}

func TestBulkheadQueueTimeout(t *testing.T) {
	b := newBH(t, 1, 5, 50*time.Millisecond)
	ctx := context.Background()
	hold, _ := b.Acquire(ctx, P0)
	defer hold.Release(Sample{})
	start := time.Now()
	_, err := b.Acquire(ctx, P1)
	if !errors.Is(err, ErrQueueTimeout) {
		t.Fatalf("Acquire = %v, want ErrQueueTimeout", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("timed out after %v, before the 50 ms queue timeout", waited)
	}
	if s := b.Stats(); s.Queued() != 0 {
		t.Fatalf("a timed-out waiter stayed queued: %+v", s)
	}
	// The pooled waiter's timer must not fire into a later wait.
	ch := enqueue(b, ctx, "later", P1)
	waitQueued(t, b, [3]int{0, 1, 0})
	hold.Release(Sample{RTT: time.Millisecond})
	if r := recv(t, ch); r.err != nil {
		t.Fatalf("later waiter: %v", r.err)
	} else {
		r.permit.Release(Sample{})
	}
}

func TestBulkheadContext(t *testing.T) {
	b := newBH(t, 1, 5, 0)
	hold, _ := b.Acquire(context.Background(), P0)
	defer hold.Release(Sample{})
	ctx, cancel := context.WithCancel(context.Background())
	ch := enqueue(b, ctx, "w", P0)
	waitQueued(t, b, [3]int{1, 0, 0})
	cancel()
	if r := recv(t, ch); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("canceled waiter: %v, want context.Canceled", r.err)
	}
	if s := b.Stats(); s.Queued() != 0 {
		t.Fatalf("canceled waiter stayed queued: %+v", s)
	}
	// A done context fails even with room.
	free := newBH(t, 5, 0, 0)
	if _, err := free.Acquire(ctx, P0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a done ctx = %v", err)
	}
	dl, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := b.Acquire(dl, P2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past the ctx deadline = %v", err)
	}
}

func TestBulkheadSetEnabled(t *testing.T) {
	b := newBH(t, 1, 5, 0)
	ctx := context.Background()
	hold, _ := b.Acquire(ctx, P0)
	ch := enqueue(b, ctx, "w", P2)
	waitQueued(t, b, [3]int{0, 0, 1})
	b.SetEnabled(false) // waiters are let through
	r := recv(t, ch)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var extra []Permit
	for i := 0; i < 10; i++ {
		p, err := b.Acquire(ctx, P2)
		if err != nil {
			t.Fatalf("disabled bulkhead refused: %v", err)
		}
		extra = append(extra, p)
	}
	if s := b.Stats(); s.Enabled || s.Inflight != 12 {
		t.Fatalf("Stats() = %+v, want disabled with 12 in flight", s)
	}
	b.SetEnabled(true) // 12 in flight over a limit of 1: new requests wait
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := b.Acquire(short, P0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("re-enabled over the limit: %v, want to wait until the deadline", err)
	}
	hold.Release(Sample{})
	r.permit.Release(Sample{})
	for i := range extra {
		extra[i].Release(Sample{})
	}
	if s := b.Stats(); s.Inflight != 0 {
		t.Fatalf("Inflight = %d after all releases", s.Inflight)
	}
}

func TestBulkheadSetConfig(t *testing.T) {
	b := newBH(t, 1, 4, 0)
	ctx := context.Background()
	hold, _ := b.Acquire(ctx, P0)
	w1 := enqueue(b, ctx, "p1", P1)
	waitQueued(t, b, [3]int{0, 1, 0})
	w2 := enqueue(b, ctx, "p2-a", P2)
	waitQueued(t, b, [3]int{0, 1, 1})
	w3 := enqueue(b, ctx, "p2-b", P2)
	waitQueued(t, b, [3]int{0, 1, 2})

	// Shrinking the queue to 1 fails the newest, least important first.
	if err := b.SetConfig(BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoStatic, Limit: 1}, QueueSize: 1}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan result{w3, w2} {
		if r := recv(t, ch); !errors.Is(r.err, ErrQueueFull) {
			t.Fatalf("%s: %v, want ErrQueueFull", r.name, r.err)
		}
	}
	waitQueued(t, b, [3]int{0, 1, 0})
	// Raising the limit grants the waiter at once.
	if err := b.SetConfig(BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoStatic, Limit: 3}, QueueSize: 1}); err != nil {
		t.Fatal(err)
	}
	r := recv(t, w1)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if s := b.Stats(); s.Limit != 3 || s.Inflight != 2 || s.QueueSize != 1 {
		t.Fatalf("Stats() = %+v", s)
	}
	if got := b.Config().Limiter.Limit; got != 3 {
		t.Fatalf("Config().Limiter.Limit = %d", got)
	}
	hold.Release(Sample{})
	r.permit.Release(Sample{})
}

// TestBulkheadNeverOverLimit: many goroutines hammer a static limit; at no
// moment do more permits run than the limit, and every attempt is
// accounted for.
func TestBulkheadNeverOverLimit(t *testing.T) {
	const limit, goroutines, each = 5, 64, 100
	b := newBH(t, limit, 16, 20*time.Millisecond)
	var running, maxRunning, granted, full, timeout atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p, err := b.Acquire(context.Background(), Priority((g+i)%3))
				switch {
				case err == nil:
					granted.Add(1)
					n := running.Add(1)
					for {
						m := maxRunning.Load()
						if n <= m || maxRunning.CompareAndSwap(m, n) {
							break
						}
					}
					if i%4 == 0 {
						time.Sleep(50 * time.Microsecond)
					}
					running.Add(-1)
					p.Release(Sample{RTT: time.Millisecond})
				case errors.Is(err, ErrQueueFull):
					full.Add(1)
				case errors.Is(err, ErrQueueTimeout):
					timeout.Add(1)
				default:
					t.Errorf("unexpected error %v", err)
				}
			}
		}(g)
	}
	wg.Wait()
	if m := maxRunning.Load(); m > limit {
		t.Fatalf("%d permits ran at once, limit %d", m, limit)
	}
	if total := granted.Load() + full.Load() + timeout.Load(); total != goroutines*each {
		t.Fatalf("accounted %d of %d attempts", total, goroutines*each)
	}
	if s := b.Stats(); s.Inflight != 0 || s.Queued() != 0 {
		t.Fatalf("Stats() = %+v at the end", s)
	}
	t.Logf("granted %d, queue full %d, queue timeout %d, max concurrent %d", granted.Load(), full.Load(), timeout.Load(), maxRunning.Load())
}

// TestBulkheadFeedsLimiter: every release reaches the limiter with the
// grant's ticket and concurrency; RTT ≤ 0 carries no measurement.
func TestBulkheadFeedsLimiter(t *testing.T) {
	rec := &recordingLimiter{limit: 8}
	b, err := NewBulkhead("ai", BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoStatic, Limit: 8}})
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.setLimiterLocked(rec)
	b.mu.Unlock()
	ctx := context.Background()
	p1, _ := b.Acquire(ctx, P1)
	p2, _ := b.Acquire(ctx, P0)
	p2.Release(Sample{RTT: 30 * time.Millisecond, Latency: 5 * time.Millisecond})
	p1.Release(Sample{})
	if len(rec.got) != 2 {
		t.Fatalf("%d samples, want 2", len(rec.got))
	}
	if s := rec.got[0]; s.Ticket != 1 || s.Inflight != 2 || s.RTT != 30*time.Millisecond || s.Latency != 5*time.Millisecond {
		t.Errorf("first sample %+v, want ticket 1 at 2 in flight", s)
	}
	if s := rec.got[1]; s.Ticket != 0 || s.Inflight != 1 || s.RTT != 0 {
		t.Errorf("second sample %+v, want ticket 0 at 1 in flight, no RTT", s)
	}
}

// recordingLimiter is a static Limiter and Ticketer that keeps its samples.
type recordingLimiter struct {
	limit int
	next  uint64
	got   []Sample
}

func (r *recordingLimiter) Limit() int        { return r.limit }
func (r *recordingLimiter) OnSample(s Sample) { r.got = append(r.got, s) }
func (r *recordingLimiter) Ticket() uint64    { r.next++; return r.next - 1 }

func TestBulkheadAcquireReleaseZeroAllocs(t *testing.T) {
	b := newBH(t, 1000, 10, time.Second)
	ctx := context.Background()
	if a := allocs.Total(1000, func() {
		p, err := b.Acquire(ctx, P1)
		if err != nil {
			t.Fatal(err)
		}
		p.Release(Sample{RTT: time.Millisecond})
	}); a != 0 {
		t.Fatalf("%d allocations in 1,000 Acquire+Release, want 0", a)
	}
}

// requeueAsync starts Requeue of pm (priority p, paying with pay) and
// returns where its result arrives.
func requeueAsync(b *Bulkhead, ctx context.Context, name string, p Priority, pm Permit, pay func() bool) <-chan result {
	ch := make(chan result, 1)
	go func() {
		np, err := b.Requeue(ctx, p, &pm, Sample{RTT: time.Millisecond, Dropped: true}, pay)
		ch <- result{name, np, err}
	}()
	return ch
}

// waitParked waits until b holds n requeued waiters awaiting a Release.
func waitParked(t *testing.T, b *Bulkhead, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		got := b.parked.n
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d parked, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// pending fails the test when ch has a result already.
func pending(t *testing.T, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s decided (err %v) before its turn", r.name, r.err)
	default:
	}
}

// TestBulkheadRequeue: a request every backend refused gives its place
// back and waits for the next Release of a request that held one (not for
// room below the limit, not for another refused one's place), then goes
// first among its priority's waiters.
func TestBulkheadRequeue(t *testing.T) {
	ctx := context.Background()
	// noPay fails the test if a requeue that can wait for a Release asks
	// for a retry token: that wait is free.
	noPay := func() bool { t.Error("pay called by a requeue that could wait for a Release"); return false }
	t.Run("waits for a release, first of its priority, free", func(t *testing.T) {
		b := newBH(t, 3, 10, 0)
		served, _ := b.Acquire(ctx, P0)
		r1, _ := b.Acquire(ctx, P1)
		r2, _ := b.Acquire(ctx, P1)
		ch1 := requeueAsync(b, ctx, "r1", P1, r1, noPay)
		waitParked(t, b, 1)
		ch2 := requeueAsync(b, ctx, "r2", P1, r2, noPay) // gives its place back: wakes no one parked
		waitParked(t, b, 2)
		if s := b.Stats(); s.Inflight != 1 {
			t.Fatalf("Inflight = %d with two places given back, want 1", s.Inflight)
		}
		// Room below the limit is not what they wait for: arrivals take it.
		w, err := b.Acquire(ctx, P1)
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.Acquire(ctx, P2)
		if err != nil {
			t.Fatal(err)
		}
		late := enqueue(b, ctx, "late", P1)
		waitQueued(t, b, [NumPriorities]int{0, 3, 0}) // the two parked count as waiting
		pending(t, ch1)
		pending(t, ch2)
		served.Release(Sample{RTT: time.Millisecond}) // a backend place freed
		if r := recv(t, ch1); r.err != nil {
			t.Fatalf("r1: %v", r.err)
		} else {
			defer r.permit.Release(Sample{})
		}
		pending(t, ch2)
		pending(t, late)
		w.Release(Sample{RTT: time.Millisecond})
		if r := recv(t, ch2); r.err != nil {
			t.Fatalf("r2: %v", r.err)
		} else {
			defer r.permit.Release(Sample{})
		}
		pending(t, late)
		y.Release(Sample{RTT: time.Millisecond})
		if r := recv(t, late); r.err != nil {
			t.Fatalf("late: %v", r.err)
		} else {
			r.permit.Release(Sample{})
		}
	})
	t.Run("nothing else in flight: pays, then a place at once", func(t *testing.T) {
		b := newBH(t, 2, 10, 0)
		pm, _ := b.Acquire(ctx, P0)
		paid := 0
		r := recv(t, requeueAsync(b, ctx, "r", P0, pm, func() bool { paid++; return true }))
		if r.err != nil {
			t.Fatal(r.err)
		}
		if s := b.Stats(); s.Inflight != 1 || paid != 1 {
			t.Fatalf("Inflight = %d, paid %d times; want 1, 1", s.Inflight, paid)
		}
		r.permit.Release(Sample{})
	})
	t.Run("nothing else in flight, no token: not requeued, the parked woken", func(t *testing.T) {
		b := newBH(t, 2, 10, 0)
		a, _ := b.Acquire(ctx, P1)
		c, _ := b.Acquire(ctx, P0)
		chA := requeueAsync(b, ctx, "a", P1, a, noPay)
		waitParked(t, b, 1)
		// c is the last in flight: no Release will come for a, and c
		// cannot wait for one.
		r := recv(t, requeueAsync(b, ctx, "c", P0, c, func() bool { return false }))
		if !errors.Is(r.err, ErrNotRequeued) || r.permit != (Permit{}) {
			t.Fatalf("c: %+v, want ErrNotRequeued and no permit", r)
		}
		ra := recv(t, chA)
		if ra.err != nil {
			t.Fatalf("a, parked before: %v, want a place", ra.err)
		}
		if s := b.Stats(); s.Inflight != 1 || s.Queued() != 0 {
			t.Fatalf("Stats() = %+v, want a in flight, none queued", s)
		}
		ra.permit.Release(Sample{})
	})
	t.Run("context ends while parked", func(t *testing.T) {
		b := newBH(t, 2, 10, 0)
		hold, _ := b.Acquire(ctx, P0)
		defer hold.Release(Sample{})
		pm, _ := b.Acquire(ctx, P0)
		cctx, cancel := context.WithCancel(ctx)
		ch := requeueAsync(b, cctx, "r", P0, pm, noPay)
		waitParked(t, b, 1)
		cancel()
		if r := recv(t, ch); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", r.err)
		}
		waitParked(t, b, 0)
		if s := b.Stats(); s.Inflight != 1 || s.Queued() != 0 {
			t.Fatalf("Stats() = %+v, want 1 in flight, none queued", s)
		}
	})
	t.Run("queue timeout while parked", func(t *testing.T) {
		b := newBH(t, 2, 10, 20*time.Millisecond)
		hold, _ := b.Acquire(ctx, P0)
		defer hold.Release(Sample{})
		pm, _ := b.Acquire(ctx, P0)
		if r := recv(t, requeueAsync(b, ctx, "r", P0, pm, noPay)); !errors.Is(r.err, ErrQueueTimeout) {
			t.Fatalf("err = %v, want ErrQueueTimeout", r.err)
		}
		waitParked(t, b, 0)
	})
}

// TestPermitQueued: a permit granted at once says it did not wait, one
// granted from the queue says it did (the gateway reads the clock for a
// queue wait only then).
func TestPermitQueued(t *testing.T) {
	b := newBH(t, 1, 4, 0)
	first, err := b.Acquire(context.Background(), P1)
	if err != nil || first.Queued() {
		t.Fatalf("first permit: queued %v, err %v; want at once", first.Queued(), err)
	}
	ch := enqueue(b, context.Background(), "second", P1)
	waitQueued(t, b, [NumPriorities]int{0, 1, 0})
	first.Release(Sample{})
	r := recv(t, ch)
	if r.err != nil || !r.permit.Queued() {
		t.Errorf("second permit: queued %v, err %v; want granted from the queue", r.permit.Queued(), r.err)
	}
	r.permit.Release(Sample{})
}
