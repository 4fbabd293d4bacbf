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

	"github.com/jonboulle/clockwork"
)

// Step applies a fault at At (from the start of the run) and, when For > 0,
// reverts it at At+For.
type Step struct {
	At     time.Duration
	Fault  string
	Params json.RawMessage // the fault's parameters; empty for its configured ones
	For    time.Duration
}

// Timeline is a list of steps, in any order. It is the one schedule of
// faults: the lab plays an experiment's faults with a Player on its own
// (pausable) clock, and Run plays a timeline on a clock of its own.
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
// to compress an experiment for --quick), rounded to the nanosecond: At,
// For, and the "for" parameter of faults that have one.
func (t Timeline) Scaled(factor float64) (Timeline, error) {
	if math.IsNaN(factor) || factor <= 0 || math.IsInf(factor, 0) {
		return nil, fmt.Errorf("chaos: time factor must be > 0, got %v", factor)
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(math.Round(float64(d) * factor)) }
	out := make(Timeline, len(t))
	for i, s := range t {
		s.At, s.For = scale(s.At), scale(s.For)
		p, err := scaleForParam(s.Params, scale)
		if err != nil {
			return nil, fmt.Errorf("chaos: timeline step %d: %w", i, err)
		}
		s.Params = p
		out[i] = s
	}
	return out, nil
}

// scaleForParam scales the "for" parameter of params, if it has one.
func scaleForParam(params json.RawMessage, scale func(time.Duration) time.Duration) (json.RawMessage, error) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return params, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p, &m); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	raw, ok := m["for"]
	if !ok {
		return params, nil
	}
	var d Duration
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("for: %w", err)
	}
	m["for"], _ = json.Marshal(Duration(scale(d.D())))
	return json.Marshal(m)
}

// Action is one apply or revert of a timeline step, due at At.
type Action struct {
	Step   int           // index of the step in the timeline
	Fault  string        // the step's fault
	Revert bool          // revert (at At+For) rather than apply (at At)
	At     time.Duration // when it is due on the timeline's clock
	// Params are an apply's parameters: the step's, with "for": "0s" added
	// when the step has its own For and the fault also takes a "for"
	// parameter the step left out, so that the timeline's For (on the
	// caller's clock, which may pause) reverts it rather than the fault's
	// default duration.
	Params json.RawMessage
	// For is the step's For: an apply with For > 0 will be reverted by the
	// timeline at At+For.
	For time.Duration
}

// Do performs the action on ctl.
func (a Action) Do(ctx context.Context, ctl *Controller) error {
	if a.Revert {
		return ctl.Revert(ctx, a.Fault)
	}
	return ctl.Apply(ctx, a.Fault, a.Params)
}

// Player hands out a timeline's actions as a clock the caller owns passes
// their times. Actions come in time order; at equal times reverts come
// first, then steps in timeline order. A Player is not safe for concurrent
// use: one goroutine (the lab's control loop, or Run) owns it.
type Player struct {
	actions []Action
	next    int
	owner   map[string]int // fault → the step whose apply was handed out last
}

// Play returns a Player of t, with parameters resolved against reg.
func (t Timeline) Play(reg *Registry) *Player {
	p := &Player{owner: map[string]int{}}
	for i, s := range t {
		p.actions = append(p.actions, Action{Step: i, Fault: s.Fault, At: s.At, Params: applyParams(reg, s), For: s.For})
		if s.For > 0 {
			p.actions = append(p.actions, Action{Step: i, Fault: s.Fault, Revert: true, At: s.At + s.For, For: s.For})
		}
	}
	sort.SliceStable(p.actions, func(a, b int) bool {
		x, y := p.actions[a], p.actions[b]
		if x.At != y.At {
			return x.At < y.At
		}
		return x.Revert && !y.Revert
	})
	return p
}

// Due returns the actions due at or before now that were not returned yet.
// A fault has one instance at a time: a step's apply replaces an earlier
// step's instance of the same fault, so the earlier step's revert, when it
// falls due, is dropped — it would end the later step's fault before its
// time.
func (p *Player) Due(now time.Duration) []Action {
	var due []Action
	for ; p.next < len(p.actions) && p.actions[p.next].At <= now; p.next++ {
		a := p.actions[p.next]
		switch {
		case !a.Revert:
			p.owner[a.Fault] = a.Step
		case p.owner[a.Fault] != a.Step:
			continue // superseded
		}
		due = append(due, a)
	}
	return due
}

// Next is when the next action is due; false once every action was handed out.
func (p *Player) Next() (time.Duration, bool) {
	if p.next >= len(p.actions) {
		return 0, false
	}
	return p.actions[p.next].At, true
}

// applyParams is Action.Params for step s.
func applyParams(reg *Registry, s Step) json.RawMessage {
	if s.For <= 0 {
		return s.Params
	}
	m := map[string]json.RawMessage{}
	if p := bytes.TrimSpace(s.Params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		if json.Unmarshal(p, &m) != nil {
			return s.Params // Apply reports the bad parameters
		}
	}
	if _, set := m["for"]; set {
		return s.Params
	}
	m["for"] = json.RawMessage(`"0s"`)
	withFor, err := json.Marshal(m)
	if err != nil {
		return s.Params
	}
	if _, err := reg.New(s.Fault, withFor); err != nil {
		return s.Params // the fault has no "for" parameter
	}
	return withFor
}

// Run plays t on ctl from now, by clk: each step is applied at its At and
// reverted at At+For. It returns when every action has been done, or when
// ctx ends (ctx.Err(); faults still active stay active — the lab calls
// RevertAll when it stops). Failed actions do not stop the timeline; their
// errors are joined into the result.
func (t Timeline) Run(ctx context.Context, ctl *Controller, clk clockwork.Clock) error {
	p := t.Play(ctl.reg)
	start := clk.Now()
	var errs []error
	for {
		at, ok := p.Next()
		if !ok {
			return errors.Join(errs...)
		}
		if d := clk.Until(start.Add(at)); d > 0 {
			timer := clk.NewTimer(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				return errors.Join(append(errs, ctx.Err())...)
			case <-timer.Chan():
			}
		} else if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
		for _, a := range p.Due(clk.Since(start)) {
			if err := a.Do(ctx, ctl); err != nil {
				errs = append(errs, fmt.Errorf("chaos: timeline step %d (%s at %v): %w", a.Step, a.Fault, a.At, err))
			}
		}
	}
}
