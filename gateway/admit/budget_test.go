package admit

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestBudget(t *testing.T) {
	type op struct {
		acquire bool // else release
		tokens  int64
		ok      bool // for acquire
		after   int64
	}
	tests := []struct {
		name     string
		capacity int64
		ops      []op
	}{
		{"fills exactly", 100, []op{
			{true, 60, true, 60}, {true, 40, true, 100}, {true, 1, false, 100},
			{false, 60, false, 40}, {true, 61, false, 40}, {true, 60, true, 100},
		}},
		{"zero and negative tokens always pass and take nothing", 10, []op{
			{true, 10, true, 10}, {true, 0, true, 10}, {true, -5, true, 10}, {false, -5, false, 10},
		}},
		{"oversized request only when alone", 100, []op{
			{true, 150, true, 150}, {true, 1, false, 150}, {false, 150, false, 0},
			{true, 1, true, 1}, {true, 150, false, 1},
		}},
		{"zero budget admits lone requests only", 0, []op{
			{true, 5, true, 5}, {true, 5, false, 5}, {false, 5, false, 0},
		}},
		{"over-release clamps at zero", 10, []op{
			{true, 4, true, 4}, {false, 9, false, 0}, {true, 10, true, 10},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(tt.capacity)
			for i, o := range tt.ops {
				if o.acquire {
					if got := b.Acquire(o.tokens); got != o.ok {
						t.Fatalf("op %d: Acquire(%d) = %v, want %v", i, o.tokens, got, o.ok)
					}
				} else {
					b.Release(o.tokens)
				}
				if got := b.Inflight(); got != o.after {
					t.Fatalf("op %d: Inflight() = %d, want %d", i, got, o.after)
				}
			}
		})
	}
}

func TestBudgetSetCapacity(t *testing.T) {
	b := NewBudget(100)
	if !b.Acquire(80) {
		t.Fatal("Acquire(80) failed")
	}
	b.SetCapacity(50)
	if b.Capacity() != 50 || b.Acquire(1) {
		t.Fatal("after shrinking below in-flight, Acquire must fail")
	}
	b.Release(80)
	if !b.Acquire(50) || b.Acquire(1) {
		t.Fatal("shrunk budget not applied exactly")
	}
	b.SetCapacity(-3)
	if b.Capacity() != 0 {
		t.Fatalf("Capacity() = %d after SetCapacity(-3), want 0", b.Capacity())
	}
}

// TestBudgetConcurrentExact: under contention the held tokens never exceed
// the budget (a lone oversized request aside, none here) and return to 0.
func TestBudgetConcurrentExact(t *testing.T) {
	const capacity = 1000
	b := NewBudget(capacity)
	var wg sync.WaitGroup
	var over atomic.Bool
	var granted atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				n := int64(1 + (i*7+g*13)%200)
				if b.Acquire(n) {
					granted.Add(1)
					if b.Inflight() > capacity {
						over.Store(true)
					}
					b.Release(n)
				}
			}
		}(g)
	}
	wg.Wait()
	if over.Load() {
		t.Fatal("tokens in flight exceeded the budget")
	}
	if b.Inflight() != 0 {
		t.Fatalf("Inflight() = %d after all releases, want 0", b.Inflight())
	}
	if granted.Load() == 0 {
		t.Fatal("nothing was granted")
	}
}

func TestBudgetZeroAllocs(t *testing.T) {
	b := NewBudget(1 << 20)
	if a := testing.AllocsPerRun(1000, func() {
		if b.Acquire(100) {
			b.Release(100)
		}
	}); a != 0 {
		t.Fatalf("%v allocs per Acquire+Release, want 0", a)
	}
}
