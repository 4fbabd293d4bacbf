package load

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/levee-lab/levee/gateway/ratelimit"
)

// referenceLimiter decides, for each priority that has a rule in
// Config.Reference, what one exact limiter in one place would let through
// of the requests sent, at their intended arrival times. It is called by
// the scheduler goroutine only.
type referenceLimiter struct {
	store *ratelimit.Local
	rules [3]*ratelimit.Rule // by priority; nil: no reference
}

// newReferenceLimiter returns nil when rules is empty. rules must have
// passed validateReference.
func newReferenceLimiter(rules map[string]ratelimit.Rule) *referenceLimiter {
	if len(rules) == 0 {
		return nil
	}
	r := &referenceLimiter{store: ratelimit.NewLocal()}
	for name, rule := range rules {
		p, _ := priorityIndex(name)
		r.rules[p] = &rule
	}
	return r
}

// passes reports whether the reference lets priority p's request arriving
// at t through; false when p has no reference. It never blocks.
func (r *referenceLimiter) passes(p priority, t time.Time) bool {
	if r == nil || r.rules[p] == nil {
		return false
	}
	// Each priority has its own key: one tenant per priority, as
	// experiment.GlobalLimits resolves them.
	d, err := r.store.Allow(context.Background(), Priorities[p], *r.rules[p], 1, t)
	return err == nil && d.Allowed
}

// validateReference reports the first thing wrong with Config.Reference,
// naming the field: an unknown priority, an invalid rule, or a reference
// together with client retries (the gateway then decides on attempts the
// reference never sees).
func validateReference(rules map[string]ratelimit.Rule, retry RetryPolicy) error {
	if len(rules) == 0 {
		return nil
	}
	if retry.Enabled() {
		return fmt.Errorf("load: reference: needs one attempt per request; retry.attempts is %d", retry.Attempts)
	}
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		if _, ok := priorityIndex(name); !ok {
			return fmt.Errorf("load: reference.%s: not a priority (want one of %v)", name, Priorities)
		}
		rule := rules[name]
		if err := rule.Validate(); err != nil {
			return fmt.Errorf("load: reference.%s: %w", name, err)
		}
		if err := rule.CheckRefill(); err != nil {
			return fmt.Errorf("load: reference.%s: %w", name, err)
		}
	}
	return nil
}
