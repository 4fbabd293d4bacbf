package upstream

import (
	"testing"
	"time"
)

func TestRetryBudget(t *testing.T) {
	type step struct {
		advance  time.Duration
		deposits int
		tries    int // withdrawals attempted
	}
	tests := []struct {
		name    string
		cfg     RetryBudgetConfig
		steps   []step
		granted int // total withdrawals granted
	}{
		{"no traffic no reserve", RetryBudgetConfig{Ratio: 0.1}, []step{{0, 0, 5}}, 0},
		{"nine requests buy nothing", RetryBudgetConfig{Ratio: 0.1}, []step{{0, 9, 5}}, 0},
		{"ten requests buy one", RetryBudgetConfig{Ratio: 0.1}, []step{{0, 10, 5}}, 1},
		{"thousand buy hundred", RetryBudgetConfig{Ratio: 0.1}, []step{{0, 1000, 500}}, 100},
		{"ratio 0.25", RetryBudgetConfig{Ratio: 0.25}, []step{{0, 100, 100}}, 25},
		{"reserve only", RetryBudgetConfig{Ratio: 0.1, MinPerSecond: 2, TTL: 5 * time.Second}, []step{{0, 0, 50}}, 10},
		{"reserve plus ratio", RetryBudgetConfig{Ratio: 0.1, MinPerSecond: 1, TTL: 10 * time.Second}, []step{{0, 1000, 500}}, 110},
		{"deposits expire after ttl", RetryBudgetConfig{Ratio: 0.1, TTL: time.Second}, []step{{0, 100, 0}, {1100 * time.Millisecond, 0, 10}}, 0},
		{"deposits within ttl survive", RetryBudgetConfig{Ratio: 0.1, TTL: time.Second}, []step{{0, 100, 0}, {500 * time.Millisecond, 0, 20}}, 10},
		{"withdrawals expire too", RetryBudgetConfig{Ratio: 0.1, TTL: time.Second},
			[]step{{0, 100, 10}, {1100 * time.Millisecond, 50, 10}}, 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			rb := NewRetryBudget(tt.cfg, clk)
			granted := 0
			for _, s := range tt.steps {
				clk.Advance(s.advance)
				for range s.deposits {
					rb.Deposit(LowestPriority)
				}
				for range s.tries {
					if rb.TryWithdraw(LowestPriority) {
						granted++
					}
				}
			}
			if granted != tt.granted {
				t.Fatalf("granted %d retries, want %d", granted, tt.granted)
			}
			if rb.Balance(LowestPriority) != 0 && granted > 0 && tt.steps[len(tt.steps)-1].tries > granted {
				t.Fatalf("balance %d left after a denial", rb.Balance(LowestPriority))
			}
		})
	}
}

// Interleaved as the pool does it: one deposit per request, one retry
// attempt per failed request. At Ratio 0.1 exactly every tenth is granted.
func TestRetryBudgetInterleaved(t *testing.T) {
	rb := NewRetryBudget(RetryBudgetConfig{Ratio: 0.1}, newFakeClock())
	var granted []int
	for i := 1; i <= 100; i++ {
		rb.Deposit(LowestPriority)
		if rb.TryWithdraw(LowestPriority) {
			granted = append(granted, i)
		}
	}
	if len(granted) != 10 || granted[0] != 10 || granted[9] != 100 {
		t.Fatalf("granted at %v, want every 10th request", granted)
	}
}

// Per-priority pots: a retry draws on its own pot, then on less important
// priorities' pots, then on the reserve; never on a more important one.
func TestRetryBudgetPriorities(t *testing.T) {
	type op struct {
		deposit  [numPriorities]int // requests per priority
		withdraw [numPriorities]int // retries asked per priority, in order P2, P1, P0
	}
	tests := []struct {
		name    string
		cfg     RetryBudgetConfig
		ops     []op
		granted [numPriorities]int
	}{
		// 100 P0 and 900 P2 requests at 0.1: 10 P0 tokens, 90 P2 tokens.
		// P2 asks for 200 first: it gets its 90 and nothing of P0's; P0
		// then still has its 10.
		{"P2 storm leaves P0 its own", RetryBudgetConfig{Ratio: 0.1},
			[]op{{deposit: [3]int{100, 0, 900}, withdraw: [3]int{20, 0, 200}}}, [3]int{10, 0, 90}},
		// P0 borrows what P2 left.
		{"P0 borrows from P2", RetryBudgetConfig{Ratio: 0.1},
			[]op{{deposit: [3]int{100, 0, 900}, withdraw: [3]int{60, 0, 10}}}, [3]int{60, 0, 10}},
		// P1 borrows from P2 but not from P0.
		{"P1 borrows down, not up", RetryBudgetConfig{Ratio: 0.1},
			[]op{{deposit: [3]int{500, 100, 100}, withdraw: [3]int{0, 100, 0}}}, [3]int{0, 20, 0}},
		// The reserve is drawn last, by anyone.
		{"reserve for everyone", RetryBudgetConfig{Ratio: 0.1, MinPerSecond: 1, TTL: 5 * time.Second},
			[]op{{deposit: [3]int{0, 0, 0}, withdraw: [3]int{3, 0, 10}}}, [3]int{0, 0, 5}},
		// Shared: one pot, first come first served (P2 asks first).
		{"shared pot", RetryBudgetConfig{Ratio: 0.1, Shared: true},
			[]op{{deposit: [3]int{100, 0, 900}, withdraw: [3]int{20, 0, 200}}}, [3]int{0, 0, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rb := NewRetryBudget(tt.cfg, newFakeClock())
			var got [numPriorities]int
			total, deposits := 0, 0
			for _, o := range tt.ops {
				for p, k := range o.deposit {
					for range k {
						rb.Deposit(p)
						deposits++
					}
				}
				for _, p := range []int{2, 1, 0} {
					for range o.withdraw[p] {
						if rb.TryWithdraw(p) {
							got[p]++
							total++
						}
					}
				}
			}
			if got != tt.granted {
				t.Fatalf("granted %v (P0 P1 P2), want %v", got, tt.granted)
			}
			reserve := int(tt.cfg.MinPerSecond * tt.cfg.WithDefaults().TTL.Seconds())
			if limit := int(tt.cfg.WithDefaults().Ratio*float64(deposits)) + reserve; total > limit {
				t.Fatalf("%d retries granted, above the budget's %d", total, limit)
			}
		})
	}
}

// Out-of-range priorities count as the nearest valid one.
func TestRetryBudgetClampsPriority(t *testing.T) {
	rb := NewRetryBudget(RetryBudgetConfig{Ratio: 0.5}, newFakeClock())
	rb.Deposit(-3) // counts as P0
	rb.Deposit(-3)
	if rb.TryWithdraw(7) { // counts as P2: may not touch P0's pot
		t.Fatal("P2 retry drew on P0's pot")
	}
	if !rb.TryWithdraw(0) || rb.TryWithdraw(0) {
		t.Fatal("P0 should have exactly one token")
	}
}
