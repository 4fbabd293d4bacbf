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
					rb.Deposit()
				}
				for range s.tries {
					if rb.TryWithdraw(HighestPriority) {
						granted++
					}
				}
			}
			if granted != tt.granted {
				t.Fatalf("granted %d retries, want %d", granted, tt.granted)
			}
			if rb.Balance(HighestPriority) != 0 && granted > 0 && tt.steps[len(tt.steps)-1].tries > granted {
				t.Fatalf("balance %d left after a denial", rb.Balance(HighestPriority))
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
		rb.Deposit()
		if rb.TryWithdraw(HighestPriority) {
			granted = append(granted, i)
		}
	}
	if len(granted) != 10 || granted[0] != 10 || granted[9] != 100 {
		t.Fatalf("granted at %v, want every 10th request", granted)
	}
}

// The P0 reserve: lower priorities spend at most 1 − P0Reserve of the
// budget; P0 may spend all of it, whoever asked first.
func TestRetryBudgetP0Reserve(t *testing.T) {
	type ask struct {
		priority, n int
	}
	tests := []struct {
		name     string
		cfg      RetryBudgetConfig
		requests int
		asks     []ask // in order
		granted  []int // per ask
	}{
		// 1000 requests at 0.1: 100 tokens, 50 of them P0's.
		{"P2 storm leaves P0 its half", RetryBudgetConfig{Ratio: 0.1}, 1000,
			[]ask{{2, 200}, {0, 80}}, []int{50, 50}},
		{"P1 and P2 share the other half", RetryBudgetConfig{Ratio: 0.1}, 1000,
			[]ask{{1, 30}, {2, 30}, {0, 100}}, []int{30, 20, 50}},
		{"P0 may spend everything", RetryBudgetConfig{Ratio: 0.1}, 1000,
			[]ask{{0, 200}, {2, 10}}, []int{100, 0}},
		{"reserve 0.8", RetryBudgetConfig{Ratio: 0.1, P0Reserve: 0.8}, 1000,
			[]ask{{2, 200}, {0, 200}}, []int{20, 80}},
		{"min_per_second counts in the budget", RetryBudgetConfig{Ratio: 0.1, MinPerSecond: 1, TTL: 5 * time.Second}, 0,
			[]ask{{2, 10}, {0, 10}}, []int{2, 3}},
		{"shared: first come first served", RetryBudgetConfig{Ratio: 0.1, Shared: true}, 1000,
			[]ask{{2, 200}, {0, 80}}, []int{100, 0}},
		{"out-of-range priorities clamp", RetryBudgetConfig{Ratio: 0.1}, 100,
			[]ask{{7, 10}, {-3, 10}}, []int{5, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rb := NewRetryBudget(tt.cfg, newFakeClock())
			for range tt.requests {
				rb.Deposit()
			}
			total := 0
			for i, a := range tt.asks {
				got := 0
				for range a.n {
					if rb.TryWithdraw(a.priority) {
						got++
					}
				}
				total += got
				if got != tt.granted[i] {
					t.Fatalf("ask %d (P%d × %d): granted %d, want %d", i, a.priority, a.n, got, tt.granted[i])
				}
			}
			cfg := tt.cfg.WithDefaults()
			if limit := int(cfg.Ratio*float64(tt.requests) + cfg.MinPerSecond*cfg.TTL.Seconds()); total > limit {
				t.Fatalf("%d retries granted, above the budget's %d", total, limit)
			}
		})
	}
}
