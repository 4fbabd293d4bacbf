package admit

import (
	"errors"
	"github.com/levee-lab/levee/internal/allocs"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

func TestBudgetConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   BudgetConfig
		field string
	}{
		{"default", DefaultBudgetConfig(1000), ""},
		{"no reserve", BudgetConfig{Tokens: 10}, ""},
		{"cap at the headroom", BudgetConfig{Tokens: 1000, ReserveP0: 0.2, MaxRequestTokens: 200}, ""},
		{"zero tokens", BudgetConfig{}, "tokens"},
		{"reserve 1", BudgetConfig{Tokens: 10, ReserveP0: 1}, "reserve_p0"},
		{"negative reserve", BudgetConfig{Tokens: 10, ReserveP0: -0.1}, "reserve_p0"},
		{"reserves sum to 1", BudgetConfig{Tokens: 10, ReserveP0: 0.5, ReserveP1: 0.5}, "reserve_p1"},
		{"negative cap", BudgetConfig{Tokens: 10, MaxRequestTokens: -1}, "max_request_tokens"},
		{"cap above the P0 headroom", BudgetConfig{Tokens: 1000, ReserveP0: 0.2, MaxRequestTokens: 201}, "max_request_tokens"},
		{"cap above the budget", BudgetConfig{Tokens: 1000, MaxRequestTokens: 1001}, "max_request_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			var fe *BudgetFieldError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("Validate() = %v", err)
			case tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field):
				t.Fatalf("Validate() = %v, want a *BudgetFieldError on %s", err, tt.field)
			}
		})
	}
}

func TestBudgetReserve(t *testing.T) {
	type op struct {
		p       Priority
		tokens  int64 // < 0: release -tokens
		want    error
		inAfter int64
	}
	// 1000 tokens: P0 may fill 1000, P1 750, P2 650; the cap is 250.
	cfg := BudgetConfig{Tokens: 1000, ReserveP0: 0.25, ReserveP1: 0.10}
	tests := []struct {
		name string
		ops  []op
	}{
		{"P2 stops at its ceiling, P0 still fits", []op{
			{P2, 250, nil, 250}, {P2, 250, nil, 500}, {P2, 150, nil, 650}, {P2, 1, ErrBudgetFull, 650},
			{P1, 100, nil, 750}, {P1, 1, ErrBudgetFull, 750}, {P0, 250, nil, 1000}, {P0, 1, ErrBudgetFull, 1000},
		}},
		{"over the per-request cap, whatever the load", []op{
			{P0, 251, ErrOverRequestCap, 0}, {P2, 10000, ErrOverRequestCap, 0}, {P0, 250, nil, 250},
		}},
		{"release in parts", []op{
			{P1, 200, nil, 200}, {P1, -50, nil, 150}, {P1, -150, nil, 0}, {P1, -10, nil, 0},
		}},
		{"zero and negative tokens pass and take nothing", []op{
			{P2, 0, nil, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(cfg)
			for i, o := range tt.ops {
				if o.tokens < 0 {
					b.Release(-o.tokens)
				} else if got := b.Reserve(o.p, o.tokens); !errors.Is(got, o.want) || (o.want == nil && got != nil) {
					t.Fatalf("op %d: Reserve(%s, %d) = %v, want %v", i, o.p, o.tokens, got, o.want)
				}
				if got := b.Inflight(); got != o.inAfter {
					t.Fatalf("op %d: Inflight() = %d, want %d", i, got, o.inAfter)
				}
			}
		})
	}
}

// TestBudgetP0HeadroomHolds: in any interleaving of P1 and P2 reserves and
// releases (random sizes up to the cap), a P0 request of up to the cap
// always passes while no other P0 request is in flight — no mix of less
// important requests can shed P0 for budget (issue 12).
func TestBudgetP0HeadroomHolds(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tokens := int64(100 + rng.IntN(1_000_000))
		cfg := BudgetConfig{Tokens: tokens, ReserveP0: 0.05 + rng.Float64()*0.5, ReserveP1: rng.Float64() * 0.3}
		if cfg.Validate() != nil {
			continue
		}
		b := NewBudget(cfg)
		var held []int64
		for range 2000 {
			if len(held) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(held))
				b.Release(held[i])
				held = append(held[:i], held[i+1:]...)
			} else {
				n := 1 + rng.Int64N(b.RequestCap())
				if b.Reserve(Priority(1+rng.IntN(2)), n) == nil {
					held = append(held, n)
				}
			}
			p0 := 1 + rng.Int64N(b.RequestCap())
			if err := b.Reserve(P0, p0); err != nil {
				t.Fatalf("seed %d: P0 of %d refused (%v) with %d of %d held by P1/P2 (cap %d)", seed, p0, err, b.Inflight(), tokens, b.RequestCap())
			}
			b.Release(p0)
		}
	}
}

func TestBudgetSetCapacity(t *testing.T) {
	b := NewBudget(BudgetConfig{Tokens: 100, ReserveP0: 0.5, MaxRequestTokens: 50})
	if err := b.Reserve(P0, 50); err != nil {
		t.Fatal(err)
	}
	if err := b.SetCapacity(40); err != nil {
		t.Fatal(err)
	}
	if b.Capacity() != 40 || b.RequestCap() != 20 || !errors.Is(b.Reserve(P0, 1), ErrBudgetFull) {
		t.Fatalf("after shrinking below in-flight: capacity %d cap %d", b.Capacity(), b.RequestCap())
	}
	b.Release(50)
	if b.Reserve(P0, 20) != nil || b.Reserve(P0, 20) != nil || b.Reserve(P0, 1) == nil {
		t.Fatal("shrunk budget not applied exactly")
	}
	if b.SetCapacity(0) == nil {
		t.Fatal("SetCapacity(0) accepted")
	}
}

// TestBudgetConcurrentExact: under contention every priority stays within
// its ceiling and the tokens return to 0.
func TestBudgetConcurrentExact(t *testing.T) {
	b := NewBudget(BudgetConfig{Tokens: 1000, ReserveP0: 0.3})
	var wg sync.WaitGroup
	var over atomic.Bool
	var granted atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			p := Priority(g % NumPriorities)
			for i := range 2000 {
				n := int64(1 + (i*7+g*13)%200)
				if b.Reserve(p, n) == nil {
					granted.Add(1)
					if b.Inflight() > b.Capacity() {
						over.Store(true)
					}
					b.Release(n)
				}
			}
		})
	}
	wg.Wait()
	if over.Load() || b.Inflight() != 0 || granted.Load() == 0 {
		t.Fatalf("over %v, in flight %d after all releases, granted %d", over.Load(), b.Inflight(), granted.Load())
	}
}

func TestBudgetZeroAllocs(t *testing.T) {
	b := NewBudget(DefaultBudgetConfig(1 << 20))
	if a := allocs.Total(1000, func() {
		if b.Reserve(P1, 100) == nil {
			b.Release(100)
		}
	}); a != 0 {
		t.Fatalf("%d allocations in 1,000 Reserve+Release, want 0", a)
	}
}

// TestBudgetRequestCapFor: a request over what its priority may ever fill
// is refused as over the cap (it can never pass), not as a full budget
// (try later): reserve_p0 0.6 caps a request at 600 of 1000 tokens, but
// P1 and P2 may fill 400.
func TestBudgetRequestCapFor(t *testing.T) {
	b := NewBudget(BudgetConfig{Tokens: 1000, ReserveP0: 0.6})
	for p, want := range [NumPriorities]int64{600, 400, 400} {
		if got := b.RequestCapFor(Priority(p)); got != want {
			t.Errorf("RequestCapFor(%s) = %d, want %d", Priority(p), got, want)
		}
	}
	if err := b.Reserve(P2, 500); !errors.Is(err, ErrOverRequestCap) {
		t.Fatalf("Reserve(P2, 500) with nothing in flight = %v, want ErrOverRequestCap", err)
	}
	if err := b.Reserve(P0, 500); err != nil {
		t.Fatalf("Reserve(P0, 500) = %v", err)
	}
	if err := b.Reserve(P2, 400); !errors.Is(err, ErrBudgetFull) {
		t.Fatalf("Reserve(P2, 400) with 500 in flight = %v, want ErrBudgetFull", err)
	}
}
