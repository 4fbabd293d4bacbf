package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"github.com/levee-lab/levee/internal/allocs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func localAllow(t *testing.T, s Store, key string, r Rule, cost int64, at time.Time) Decision {
	t.Helper()
	d, err := s.Allow(context.Background(), key, r, cost, at)
	if err != nil {
		t.Fatalf("Allow(%q, cost %d, t0+%v) = %v", key, cost, at.Sub(t0), err)
	}
	if d.Allowed != (d.RetryAfter == 0) {
		t.Fatalf("Allow(%q, t0+%v) = %+v: RetryAfter must be > 0 exactly when denied", key, at.Sub(t0), d)
	}
	return d
}

// checkRetryAfter asserts the Decision contract: a retry of the same cost at
// RetryAfter passes, and one 1 ms earlier is denied. It probes copies of
// the store state by replaying history into fresh stores via replay.
func checkRetryAfter(t *testing.T, replay func() Store, key string, r Rule, cost int64, at time.Time, d Decision) {
	t.Helper()
	if d.Allowed {
		return
	}
	if early := d.RetryAfter - time.Millisecond; early > 0 {
		if e := localAllow(t, replay(), key, r, cost, at.Add(early)); e.Allowed {
			t.Errorf("retry at t0+%v (1 ms before RetryAfter %v) passed; RetryAfter is too late", at.Add(early).Sub(t0), d.RetryAfter)
		}
	}
	if e := localAllow(t, replay(), key, r, cost, at.Add(d.RetryAfter)); !e.Allowed {
		t.Errorf("retry at t0+%v (exactly RetryAfter %v) denied: %+v; RetryAfter is too early", at.Add(d.RetryAfter).Sub(t0), d.RetryAfter, e)
	}
}

type step struct {
	at      time.Duration // since t0
	cost    int64
	allowed bool
	retry   time.Duration // expected RetryAfter when denied; 0: only check the contract
	remain  int64         // expected Remaining; -1: don't check
}

func runSteps(t *testing.T, r Rule, steps []step) {
	t.Helper()
	for i, st := range steps {
		s := NewLocal()
		// Replaying steps 0..i-1 into a fresh store rebuilds the state
		// before step i, so RetryAfter can be probed without disturbing it.
		replay := func() Store {
			s := NewLocal()
			for _, p := range steps[:i] {
				localAllow(t, s, "k", r, p.cost, t0.Add(p.at))
			}
			return s
		}
		for _, p := range steps[:i] {
			localAllow(t, s, "k", r, p.cost, t0.Add(p.at))
		}
		d := localAllow(t, s, "k", r, st.cost, t0.Add(st.at))
		if d.Allowed != st.allowed {
			t.Fatalf("step %d (t0+%v cost %d): Allowed = %v, want %v (%+v)", i, st.at, st.cost, d.Allowed, st.allowed, d)
		}
		if st.retry != 0 && d.RetryAfter != st.retry {
			t.Errorf("step %d: RetryAfter = %v, want %v", i, d.RetryAfter, st.retry)
		}
		if st.remain >= 0 && d.Remaining != st.remain {
			t.Errorf("step %d: Remaining = %d, want %d", i, d.Remaining, st.remain)
		}
		if d.Limit != r.Capacity() {
			t.Errorf("step %d: Limit = %d, want %d", i, d.Limit, r.Capacity())
		}
		checkRetryAfter(t, replay, "k", r, st.cost, t0.Add(st.at), d)
	}
}

func TestLocalSlidingWindow(t *testing.T) {
	r := Rule{Algorithm: SlidingWindow, Limit: 3, Window: time.Second}
	tests := []struct {
		name  string
		steps []step
	}{
		{"limit then deny until the oldest expires", []step{
			{0, 1, true, 0, 2},
			{100 * time.Millisecond, 1, true, 0, 1},
			{200 * time.Millisecond, 1, true, 0, 0},
			{300 * time.Millisecond, 1, false, 700 * time.Millisecond, 0},
			{999 * time.Millisecond, 1, false, time.Millisecond, 0},
			{time.Second, 1, true, 0, 0}, // the first expired exactly now
			{1050 * time.Millisecond, 1, false, 50 * time.Millisecond, 0},
		}},
		{"window slides: no burst at a boundary", []step{
			{900 * time.Millisecond, 3, true, 0, 0},
			{1100 * time.Millisecond, 1, false, 800 * time.Millisecond, 0}, // a fixed window would reset at 1 s
			{1900 * time.Millisecond, 2, true, 0, 1},
		}},
		{"cost frees enough of the oldest entries", []step{
			{0, 1, true, 0, 2},
			{100 * time.Millisecond, 1, true, 0, 1},
			{200 * time.Millisecond, 1, true, 0, 0},
			{250 * time.Millisecond, 2, false, 850 * time.Millisecond, 0}, // needs the first two gone: at 1.1 s
			{250 * time.Millisecond, 3, false, 950 * time.Millisecond, 0},
		}},
		{"denials are not counted", []step{
			{0, 3, true, 0, 0},
			{10 * time.Millisecond, 1, false, 990 * time.Millisecond, 0},
			{20 * time.Millisecond, 1, false, 980 * time.Millisecond, 0},
			{time.Second, 3, true, 0, 0},
		}},
		{"same instant merges", []step{
			{0, 1, true, 0, 2},
			{0, 1, true, 0, 1},
			{0, 1, true, 0, 0},
			{0, 1, false, time.Second, 0},
		}},
		{"clock step back counts at the newest entry", []step{
			{500 * time.Millisecond, 1, true, 0, 2},
			{400 * time.Millisecond, 2, true, 0, 0},
			{1400 * time.Millisecond, 1, false, 100 * time.Millisecond, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, r, tt.steps) })
	}
}

func TestLocalTokenBucket(t *testing.T) {
	r := Rule{Algorithm: TokenBucket, ReplenishRate: 2, Burst: 4} // a token every 500 ms
	tests := []struct {
		name  string
		rule  Rule
		steps []step
	}{
		{"burst then refill", r, []step{
			{0, 4, true, 0, 0},
			{0, 1, false, 500 * time.Millisecond, 0},
			{250 * time.Millisecond, 1, false, 250 * time.Millisecond, 0},
			{500 * time.Millisecond, 1, true, 0, 0},
			{time.Second, 2, false, 500 * time.Millisecond, 1},
			{1500 * time.Millisecond, 2, true, 0, 0},
		}},
		{"refill caps at burst", r, []step{
			{0, 1, true, 0, 3},
			{time.Hour, 4, true, 0, 0},
			{time.Hour, 1, false, 500 * time.Millisecond, 0},
		}},
		{"cost above 1 waits for the whole cost", r, []step{
			{0, 3, true, 0, 1},
			{0, 4, false, 1500 * time.Millisecond, 1},
			{1500 * time.Millisecond, 4, true, 0, 0},
		}},
		{"fractional rate", Rule{Algorithm: TokenBucket, ReplenishRate: 0.3, Burst: 1}, []step{
			{0, 1, true, 0, 0},
			{time.Second, 1, false, 0, 0}, // contract checked against ~2.33 s
			{3334 * time.Millisecond, 1, true, 0, 0},
		}},
		{"high rate", Rule{Algorithm: TokenBucket, ReplenishRate: 1e6, Burst: 10}, []step{
			{0, 10, true, 0, 0},
			{0, 10, false, 10 * time.Microsecond, 0},
			{10 * time.Microsecond, 10, true, 0, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.rule, tt.steps) })
	}
}

func TestLocalBadRequests(t *testing.T) {
	sw := Rule{Algorithm: SlidingWindow, Limit: 5, Window: time.Second}
	tb := Rule{Algorithm: TokenBucket, ReplenishRate: 1, Burst: 2}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		rule   Rule
		cost   int64
		want   string
		wantIs error
	}{
		{"invalid rule", context.Background(), Rule{Algorithm: SlidingWindow, Window: time.Second}, 1, "field limit", nil},
		{"zero cost", context.Background(), sw, 0, "cost 0", nil},
		{"negative cost", context.Background(), tb, -3, "cost -3", nil},
		{"cost above limit", context.Background(), sw, 6, "cost 6 > 5", ErrCostExceedsCapacity},
		{"cost above burst", context.Background(), tb, 3, "cost 3 > 2", ErrCostExceedsCapacity},
		{"done context", canceled, sw, 1, "context canceled", context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLocal()
			_, err := l.Allow(tt.ctx, "k", tt.rule, tt.cost, t0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Allow = %v, want an error containing %q", err, tt.want)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Fatalf("Allow = %v, want errors.Is %v", err, tt.wantIs)
			}
			if l.Len() != 0 {
				t.Fatalf("a refused request created %d keys", l.Len())
			}
		})
	}
}

func TestLocalKeysAreIndependent(t *testing.T) {
	l := NewLocal(WithShards(4))
	r := Rule{Algorithm: SlidingWindow, Limit: 2, Window: time.Second}
	for i := 0; i < 100; i++ {
		key := fmt.Sprintf("tenant-%d", i)
		for j := 0; j < 2; j++ {
			if d := localAllow(t, l, key, r, 1, t0); !d.Allowed {
				t.Fatalf("%s request %d denied", key, j)
			}
		}
		if d := localAllow(t, l, key, r, 1, t0); d.Allowed {
			t.Fatalf("%s third request allowed", key)
		}
	}
	if l.Len() != 100 {
		t.Fatalf("Len() = %d, want 100", l.Len())
	}
}

func TestLocalAlgorithmChangeResetsKey(t *testing.T) {
	l := NewLocal()
	sw := Rule{Algorithm: SlidingWindow, Limit: 1, Window: time.Hour}
	tb := Rule{Algorithm: TokenBucket, ReplenishRate: 1, Burst: 1}
	localAllow(t, l, "k", sw, 1, t0)
	if d := localAllow(t, l, "k", sw, 1, t0); d.Allowed {
		t.Fatal("sliding window over its limit allowed")
	}
	if d := localAllow(t, l, "k", tb, 1, t0); !d.Allowed {
		t.Fatal("the key under a new algorithm kept the old state")
	}
}

func TestLocalEviction(t *testing.T) {
	l := NewLocal(WithIdleTTL(time.Minute), WithSweepEvery(1<<30))
	sw := Rule{Algorithm: SlidingWindow, Limit: 2, Window: 2 * time.Minute}
	tb := Rule{Algorithm: TokenBucket, ReplenishRate: 0.01, Burst: 2} // refills in 200 s
	localAllow(t, l, "sw", sw, 2, t0)
	localAllow(t, l, "tb", tb, 2, t0)
	localAllow(t, l, "fresh", tb, 1, t0)

	l.Sweep(t0.Add(30 * time.Second)) // nothing idle for a minute yet
	if l.Len() != 3 {
		t.Fatalf("after 30 s Len() = %d, want 3", l.Len())
	}
	// "fresh" refilled its one token after 100 s: equal to a new key.
	l.Sweep(t0.Add(101 * time.Second))
	if l.Len() != 2 {
		t.Fatalf("after 101 s Len() = %d, want 2 (only the refilled bucket evicted)", l.Len())
	}
	// The window holds its entries until 120 s; the bucket refills at 200 s.
	l.Sweep(t0.Add(119 * time.Second))
	if l.Len() != 2 {
		t.Fatalf("after 119 s Len() = %d, want 2", l.Len())
	}
	// Eviction must not change a decision: the window is still full.
	if d := localAllow(t, l, "sw", sw, 1, t0.Add(119*time.Second)); d.Allowed {
		t.Fatal("sliding window forgot its entries")
	}
	l.Sweep(t0.Add(200 * time.Second))
	if l.Len() != 0 {
		t.Fatalf("after 200 s Len() = %d, want 0", l.Len())
	}
}

func TestLocalLazySweep(t *testing.T) {
	l := NewLocal(WithShards(1), WithIdleTTL(0), WithSweepEvery(10))
	r := Rule{Algorithm: SlidingWindow, Limit: 1, Window: time.Millisecond}
	for i := 0; i < 9; i++ {
		localAllow(t, l, fmt.Sprint("k", i), r, 1, t0)
	}
	if l.Len() != 9 {
		t.Fatalf("Len() = %d, want 9", l.Len())
	}
	localAllow(t, l, "last", r, 1, t0.Add(time.Second)) // the 10th decision sweeps
	if l.Len() != 1 {
		t.Fatalf("after the lazy sweep Len() = %d, want 1", l.Len())
	}
}

// TestLocalConcurrentExact: many goroutines on one key at one instant admit
// exactly Limit (sliding) or Burst (bucket).
func TestLocalConcurrentExact(t *testing.T) {
	for _, r := range []Rule{
		{Algorithm: SlidingWindow, Limit: 500, Window: time.Minute},
		{Algorithm: TokenBucket, ReplenishRate: 1e-3, Burst: 500},
	} {
		t.Run(string(r.Algorithm), func(t *testing.T) {
			l := NewLocal()
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 100; i++ {
						d, err := l.Allow(context.Background(), "hot", r, 1, t0)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							admitted.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if got := admitted.Load(); got != 500 {
				t.Fatalf("admitted %d of 1600, want exactly 500", got)
			}
		})
	}
}

func TestLocalZeroAllocs(t *testing.T) {
	l := NewLocal()
	ctx := context.Background()
	for _, r := range []Rule{
		{Algorithm: SlidingWindow, Limit: 1000, Window: time.Second},
		{Algorithm: TokenBucket, ReplenishRate: 1000, Burst: 1000},
	} {
		now := t0
		// Warm the key and let its ring reach its working size.
		for i := 0; i < 5000; i++ {
			now = now.Add(time.Millisecond)
			l.Allow(ctx, "k"+string(r.Algorithm), r, 1, now)
		}
		key := "k" + string(r.Algorithm)
		n := allocs.Total(1000, func() {
			now = now.Add(time.Millisecond)
			if _, err := l.Allow(ctx, key, r, 1, now); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("%s: %d allocations in 1,000 Allows, want 0", r.Algorithm, n)
		}
	}
}

func TestStoreFunc(t *testing.T) {
	var got string
	var s Store = StoreFunc(func(ctx context.Context, key string, r Rule, cost int64, now time.Time) (Decision, error) {
		got = key
		return Decision{Allowed: cost < 3, Limit: 3}, nil
	})
	d, err := s.Allow(context.Background(), "abc", Rule{}, 1, t0)
	if err != nil || !d.Allowed || got != "abc" {
		t.Fatalf("StoreFunc.Allow = %+v, %v (key %q)", d, err, got)
	}
}
