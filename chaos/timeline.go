package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Step applies a fault at At (from the start of the run) and, when For > 0,
// reverts it at At+For.
type Step struct {
	At     time.Duration
	Fault  string
	Params json.RawMessage // the fault's parameters; empty for its configured ones
	For    time.Duration
}

// Timeline is a list of steps, in any order.
type Timeline []Step

// Validate checks every step against reg: known fault, valid parameters,
// At and For ≥ 0.
func (t Timeline) Validate(reg *Registry) error {
	for i, s := range t {
		if s.At < 0 {
			return fmt.Errorf("chaos: timeline step %d: at must be ≥ 0, got %v", i, s.At)
		}
		if s.For < 0 {
			return fmt.Errorf("chaos: timeline step %d: for must be ≥ 0, got %v", i, s.For)
		}
		if _, err := reg.New(s.Fault, s.Params); err != nil {
			return fmt.Errorf("chaos: timeline step %d: %w", i, err)
		}
	}
	return nil
}

// Scaled returns a copy of t with every time multiplied by factor (> 0, ≤ 1
// to compress an experiment for --quick): At, For, and the "for" parameter
// of faults that have one.
func (t Timeline) Scaled(factor float64) (Timeline, error) {
	if math.IsNaN(factor) || factor <= 0 || math.IsInf(factor, 0) {
		return nil, fmt.Errorf("chaos: time factor must be > 0, got %v", factor)
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }
	out := make(Timeline, len(t))
	for i, s := range t {
		s.At, s.For = scale(s.At), scale(s.For)
		if p := bytes.TrimSpace(s.Params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(p, &m); err != nil {
				return nil, fmt.Errorf("chaos: timeline step %d: parameters: %w", i, err)
			}
			if raw, ok := m["for"]; ok {
				var d Duration
				if err := json.Unmarshal(raw, &d); err != nil {
					return nil, fmt.Errorf("chaos: timeline step %d: for: %w", i, err)
				}
				b, _ := json.Marshal(Duration(scale(d.D())))
				m["for"] = b
				np, err := json.Marshal(m)
				if err != nil {
					return nil, fmt.Errorf("chaos: timeline step %d: parameters: %w", i, err)
				}
				s.Params = np
			}
		}
		out[i] = s
	}
	return out, nil
}

type timelineEvent struct {
	at     time.Duration
	revert bool
	step   int
}

// Run plays t on ctl from now: each step is applied at its At and reverted
// at At+For. It returns when every step has been applied and reverted, or
// when ctx ends (ctx.Err(); faults still active stay active — the lab calls
// RevertAll when it stops). Failed steps do not stop the timeline; their
// errors are joined into the result.
func (t Timeline) Run(ctx context.Context, ctl *Controller) error {
	var evs []timelineEvent
	for i, s := range t {
		evs = append(evs, timelineEvent{at: s.At, step: i})
		if s.For > 0 {
			evs = append(evs, timelineEvent{at: s.At + s.For, revert: true, step: i})
		}
	}
	// By time; at equal times reverts first, then in step order.
	sort.SliceStable(evs, func(a, b int) bool {
		if evs[a].at != evs[b].at {
			return evs[a].at < evs[b].at
		}
		return evs[a].revert && !evs[b].revert
	})
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var errs []error
	for _, e := range evs {
		if d := time.Until(start.Add(e.at)); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return errors.Join(append(errs, ctx.Err())...)
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
		s := t[e.step]
		var err error
		if e.revert {
			err = ctl.Revert(ctx, s.Fault)
		} else {
			err = ctl.Apply(ctx, s.Fault, s.Params)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("chaos: timeline step %d (%s at %v): %w", e.step, s.Fault, e.at, err))
		}
	}
	return errors.Join(errs...)
}
