package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Status is one active fault.
type Status struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

// Entry is one fault of the catalogue with its current state.
type Entry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Active      bool   `json:"active"`
	Detail      string `json:"detail"` // the parameters in use (or to be used)
}

// Event reports an Apply or Revert made through a Controller.
type Event struct {
	// Time is when it was done, by the controller's clock (WithClock).
	Time   time.Time `json:"t"`
	Fault  string    `json:"fault"`
	Action string    `json:"action"` // ActionApply or ActionRevert
	Detail string    `json:"detail"`
	Err    string    `json:"error,omitempty"`
}

// Actions of an Event.
const (
	ActionApply  = "apply"
	ActionRevert = "revert"
)

// ControllerOption configures a Controller.
type ControllerOption func(*Controller)

// WithObserver makes the controller call fn after every Apply and Revert it
// performs (including failed ones), and when a fault ends on its own (its
// own duration, such as node_kill's for, ran out: a revert, on the timer's
// goroutine). fn is called on the caller's goroutine and must be quick.
func WithObserver(fn func(Event)) ControllerOption { return func(c *Controller) { c.observe = fn } }

// WithClock makes the controller stamp its Events with clk's time
// (default: the real clock): the lab's, so that a fault's window and the
// event a recording writes of it are one time.
func WithClock(clk clockwork.Clock) ControllerOption { return func(c *Controller) { c.clock = clk } }

// Controller holds one instance of every fault in a registry, applies and
// reverts them on an Env by name, and reports which are active. It is safe
// for concurrent use; operations on one fault are serialized, operations on
// different faults run concurrently.
type Controller struct {
	reg     *Registry
	env     Env
	observe func(Event)
	clock   clockwork.Clock

	mu    sync.Mutex       // guards slots' f fields
	slots map[string]*slot // fixed at construction
	order []string
}

// slot is one fault name. op serializes the operations on it; f is read and
// replaced under Controller.mu while op is held.
type slot struct {
	op sync.Mutex
	f  Fault
}

// NewController returns a controller over every fault in reg, each with its
// default parameters, acting on env.
func NewController(reg *Registry, env Env, opts ...ControllerOption) *Controller {
	c := &Controller{reg: reg, env: env, slots: map[string]*slot{}, clock: clockwork.NewRealClock()}
	for _, name := range reg.Names() {
		f, err := reg.Get(name)
		if err != nil {
			continue // cannot happen: the name comes from reg
		}
		c.slots[name] = &slot{f: f}
		c.order = append(c.order, name)
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func (c *Controller) slot(name string) (*slot, error) {
	s, ok := c.slots[name]
	if !ok {
		_, err := c.reg.Get(name) // the registry's error lists the known names
		if err == nil {
			err = fmt.Errorf("chaos: fault %q was registered after the controller was made", name)
		}
		return nil, err
	}
	return s, nil
}

func (c *Controller) fault(s *slot) Fault {
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.f
}

func (c *Controller) emit(f Fault, action string, err error) {
	if c.observe == nil {
		return
	}
	e := Event{Time: c.clock.Now(), Fault: f.Name(), Action: action, Detail: f.Detail()}
	if err != nil {
		e.Err = err.Error()
	}
	c.observe(e)
}

// Configure sets the parameters the next Apply or Toggle of name uses
// (an experiment's parameters). It fails while the fault is active, for an
// unknown name and for bad parameters.
func (c *Controller) Configure(name string, params json.RawMessage) error {
	s, err := c.slot(name)
	if err != nil {
		return err
	}
	nf, err := c.reg.New(name, params)
	if err != nil {
		return err
	}
	s.op.Lock()
	defer s.op.Unlock()
	if c.fault(s).Active() {
		return fmt.Errorf("chaos: %s is active; revert it before changing its parameters", name)
	}
	c.mu.Lock()
	s.f = nf
	c.mu.Unlock()
	return nil
}

// Apply applies name. With params (non-empty) those parameters are
// configured first; if the fault is active with other parameters it is
// reverted and applied again with the new ones. Without params the
// configured parameters are used and an active fault stays as it is.
func (c *Controller) Apply(ctx context.Context, name string, params json.RawMessage) error {
	s, err := c.slot(name)
	if err != nil {
		return err
	}
	var nf Fault
	if len(params) > 0 {
		if nf, err = c.reg.New(name, params); err != nil {
			return err
		}
	}
	s.op.Lock()
	defer s.op.Unlock()
	cur := c.fault(s)
	if nf != nil {
		if cur.Active() {
			err := cur.Revert(ctx, c.env)
			c.emit(cur, ActionRevert, err)
			if err != nil {
				return err
			}
		}
		c.mu.Lock()
		s.f = nf
		c.mu.Unlock()
		cur = nf
	} else if cur.Active() {
		return nil
	}
	err = cur.Apply(ctx, c.expiryEnv(s, cur))
	c.emit(cur, ActionApply, err)
	return err
}

// Revert reverts name if it is active.
func (c *Controller) Revert(ctx context.Context, name string) error {
	s, err := c.slot(name)
	if err != nil {
		return err
	}
	s.op.Lock()
	defer s.op.Unlock()
	return c.revertLocked(ctx, s)
}

func (c *Controller) revertLocked(ctx context.Context, s *slot) error {
	f := c.fault(s)
	if !f.Active() {
		return nil
	}
	err := f.Revert(ctx, c.env)
	c.emit(f, ActionRevert, err)
	return err
}

// Toggle reverts name when it is active and applies it (configured
// parameters) when not. It returns whether the fault is active afterwards.
func (c *Controller) Toggle(ctx context.Context, name string) (active bool, err error) {
	s, err := c.slot(name)
	if err != nil {
		return false, err
	}
	s.op.Lock()
	defer s.op.Unlock()
	f := c.fault(s)
	if f.Active() {
		err = f.Revert(ctx, c.env)
		c.emit(f, ActionRevert, err)
	} else {
		err = f.Apply(ctx, c.expiryEnv(s, f))
		c.emit(f, ActionApply, err)
	}
	return f.Active(), err
}

// RevertAll reverts every active fault in catalogue order (node_kill first,
// so nodes are back before their knobs are restored), then retries the ones
// that failed once, and returns the errors of that second pass.
func (c *Controller) RevertAll(ctx context.Context) error {
	var failed []string
	for _, name := range c.order {
		if c.revertName(ctx, name) != nil {
			failed = append(failed, name)
		}
	}
	var errs []error
	for _, name := range failed {
		errs = append(errs, c.revertName(ctx, name))
	}
	return errors.Join(errs...)
}

func (c *Controller) revertName(ctx context.Context, name string) error {
	s := c.slots[name]
	s.op.Lock()
	defer s.op.Unlock()
	return c.revertLocked(ctx, s)
}

// Active lists the faults applied now, in catalogue order.
func (c *Controller) Active() []Status {
	var out []Status
	for _, name := range c.order {
		f := c.fault(c.slots[name])
		if f.Active() {
			out = append(out, Status{Name: name, Detail: f.Detail()})
		}
	}
	return out
}

// Catalogue lists every fault in catalogue order with its state.
func (c *Controller) Catalogue() []Entry {
	out := make([]Entry, 0, len(c.order))
	for _, name := range c.order {
		f := c.fault(c.slots[name])
		out = append(out, Entry{Name: name, Description: f.Description(), Active: f.Active(), Detail: f.Detail()})
	}
	return out
}

// expiryEnv is the env a fault of slot s is applied on: the timers it sets
// (its own duration) run under the slot's lock, and one that ends the
// fault is reported as a revert, so a recording closes the fault's window
// when the fault really ended (a dashboard's node_kill comes back after
// its own 10 s).
func (c *Controller) expiryEnv(s *slot, f Fault) Env {
	return expiryEnv{Env: c.env, c: c, s: s, f: f}
}

type expiryEnv struct {
	Env
	c *Controller
	s *slot
	f Fault
}

func (e expiryEnv) After(d time.Duration, fn func()) {
	e.Env.After(d, func() {
		e.s.op.Lock()
		defer e.s.op.Unlock()
		was := e.f.Active()
		fn()
		if was && !e.f.Active() {
			e.c.emit(e.f, ActionRevert, nil)
		}
	})
}
