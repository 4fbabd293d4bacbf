package upstream

import (
	"errors"
	"math"
	"testing"
	"time"
)

// A budget's reserve (min_per_second × ttl) too large for its count of
// milli-tokens is refused, naming the field: it used to be accepted and
// to wrap to a negative reserve, so "min_per_second: 1e15" (meant as "no
// limit") allowed no retry at all. At the bound the budget still works.
func TestReserveBound(t *testing.T) {
	base := Config{Nodes: []string{"http://127.0.0.1:9001"}}
	for _, tt := range []struct {
		name  string
		mod   func(*Config)
		field string
	}{
		{"retry reserve too large", func(c *Config) { c.RetryBudget.MinPerSecond = 1e15 }, "retry_budget.min_per_second"},
		{"retry reserve infinite", func(c *Config) { c.RetryBudget.MinPerSecond = math.Inf(1) }, "retry_budget.min_per_second"},
		{"too large by its ttl", func(c *Config) {
			c.RetryBudget.MinPerSecond, c.RetryBudget.TTL = 1e9, 2000*time.Second
		}, "retry_budget.min_per_second"},
		{"hedge reserve too large", func(c *Config) { c.Hedge.MinPerSecond = 1e15 }, "hedge.min_per_second"},
		{"at the bound", func(c *Config) { c.RetryBudget.MinPerSecond, c.Hedge.MinPerSecond = 1e11, 1e11 }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mod(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate = %v, want a *FieldError for %s", err, tt.field)
			}
		})
	}
	for _, shared := range []bool{false, true} {
		b := NewRetryBudget(RetryBudgetConfig{MinPerSecond: 1e12 / DefaultRetryTTL.Seconds(), Shared: shared}, newFakeClock())
		if got := b.Balance(LowestPriority); got < int(1e12/4) || !b.TryWithdraw(LowestPriority) {
			t.Fatalf("shared %v: a reserve at the bound gives a balance of %d tokens, want about 1e12", shared, got)
		}
	}
}
