package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Factory returns a new Fault with default parameters.
type Factory func() Fault

// Registry is a catalogue of fault kinds, in registration order. It is safe
// for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	order     []string           // guarded by mu
	factories map[string]Factory // guarded by mu
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds a fault kind under the name its Factory's faults report. It
// returns an error for a nil factory, an empty name or a name taken already.
func (r *Registry) Register(f Factory) error {
	if f == nil {
		return errors.New("chaos: Register: nil factory")
	}
	name := f().Name()
	if name == "" {
		return errors.New("chaos: Register: fault has an empty name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.factories[name]; dup {
		return fmt.Errorf("chaos: Register: %q registered twice", name)
	}
	r.factories[name] = f
	r.order = append(r.order, name)
	return nil
}

// Names lists the registered faults in catalogue (registration) order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.order...)
}

// Get returns a new fault called name with its default parameters.
func (r *Registry) Get(name string) (Fault, error) {
	r.mu.RLock()
	f, ok := r.factories[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("chaos: unknown fault %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	return f(), nil
}

// New returns a fault called name with params decoded over its defaults.
// params may be empty or "null" for the defaults. Unknown parameter names
// (exact, case included), a name given twice, wrong types, trailing data
// and values Validate refuses are errors naming the field.
func (r *Registry) New(name string, params json.RawMessage) (Fault, error) {
	f, err := r.Get(name)
	if err != nil {
		return nil, err
	}
	if p := bytes.TrimSpace(params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		if err := decodeParams(name, f, p); err != nil {
			return nil, err
		}
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// Default is the catalogue every lab uses, in the order of the dashboard's
// fault keys (lab.FaultKey: 1…9, 0, then !, @, …).
var Default = func() *Registry {
	r := NewRegistry()
	for _, f := range []Factory{
		func() Fault { return NewNodeKill() },
		func() Fault { return NewModelLatency() },
		func() Fault { return NewGCPressure() },
		func() Fault { return NewCPUHog() },
		func() Fault { return NewSlowClients() },
		func() Fault { return NewTrafficSpike() },
		func() Fault { return NewModelSlots() },
		func() Fault { return NewNodeHang() },
		func() Fault { return NewModelErrors() },
		func() Fault { return NewRedisOutage() },
		func() Fault { return NewRedisMasterKill() },
	} {
		if err := r.Register(f); err != nil {
			panic(err) // programming error: the built-in catalogue is fixed
		}
	}
	return r
}()

// Effect returns what the fault called name does to the lab's capacity
// (EffectNone for an unknown name).
func (r *Registry) Effect(name string) Effect {
	f, err := r.Get(name)
	if err != nil {
		return EffectNone
	}
	if e, ok := f.(effector); ok {
		return e.Effect()
	}
	return EffectNone
}

// LabRedis returns the Redis the fault called name acts on, of those the
// lab runs (RedisNeedNone for an unknown name), so that an experiment with
// such a step and no such Redis of the lab's own is refused before its
// run. The lab asks the catalogue rather than knowing fault names, as with
// Effect.
func (r *Registry) LabRedis(name string) RedisNeed {
	f, err := r.Get(name)
	if err != nil {
		return RedisNeedNone
	}
	if u, ok := f.(labRedisUser); ok {
		return u.labRedis()
	}
	return RedisNeedNone
}
