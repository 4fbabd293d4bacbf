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
					if rb.TryWithdraw() {
						granted++
					}
				}
			}
			if granted != tt.granted {
				t.Fatalf("granted %d retries, want %d", granted, tt.granted)
			}
			if rb.Balance() != 0 && granted > 0 && tt.steps[len(tt.steps)-1].tries > granted {
				t.Fatalf("balance %d left after a denial", rb.Balance())
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
		if rb.TryWithdraw() {
			granted = append(granted, i)
		}
	}
	if len(granted) != 10 || granted[0] != 10 || granted[9] != 100 {
		t.Fatalf("granted at %v, want every 10th request", granted)
	}
}
