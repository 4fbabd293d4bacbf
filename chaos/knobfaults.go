package chaos

import (
	"context"
	"fmt"

	"github.com/levee-lab/levee/internal/wire"
)

// knobState is the state of a fault that patches node knobs: which nodes
// were patched and what to restore. saved is guarded by state.mu.
type knobState struct {
	state
	saved savedKnobs
}

func (k *knobState) applyKnobs(ctx context.Context, env Env, fault string, node NodeSet, patch map[string]any) error {
	return k.apply(func(uint64) error {
		nodes, err := node.resolve(fault, env)
		if err != nil {
			return err
		}
		saved, err := patchKnobs(ctx, env, fault, nodes, patch)
		if err != nil {
			return err
		}
		k.saved = saved
		return nil
	})
}

func (k *knobState) revertKnobs(ctx context.Context, env Env, fault string) error {
	return k.revert(func() error {
		if err := k.saved.restore(ctx, env, fault); err != nil {
			return err
		}
		k.saved = nil
		return nil
	})
}

// ModelLatency slows model nodes: service time × Multiplier + AddMs.
type ModelLatency struct {
	Node       NodeSet `json:"node"`       // 0-based node, -1 for every node, or a list of nodes
	Multiplier float64 `json:"multiplier"` // latency_multiplier, > 0
	AddMs      float64 `json:"add_ms"`     // latency_add_ms, ≥ 0
	knobState
}

// NewModelLatency returns model_latency with defaults: every node × 3.
func NewModelLatency() *ModelLatency { return &ModelLatency{Node: AllNodes(), Multiplier: 3} }

func (*ModelLatency) Name() string { return "model_latency" }
func (*ModelLatency) Description() string {
	return "model nodes answer slower: service time × multiplier + add_ms"
}

func (f *ModelLatency) checkTargets(t Topology) error { return f.Node.check(f.Name(), t.Nodes) }

func (f *ModelLatency) Validate() error {
	if err := f.Node.validate(f.Name()); err != nil {
		return err
	}
	if !(f.Multiplier > 0 && f.Multiplier <= 100) {
		return paramErr(f.Name(), "multiplier", "must be within (0, 100], got %v", f.Multiplier)
	}
	if !(f.AddMs >= 0 && f.AddMs <= 600000) {
		return paramErr(f.Name(), "add_ms", "must be within [0, 600000], got %v", f.AddMs)
	}
	return nil
}

func (f *ModelLatency) Apply(ctx context.Context, env Env) error {
	return f.applyKnobs(ctx, env, f.Name(), f.Node, map[string]any{
		wire.KnobLatencyMultiplier: f.Multiplier, wire.KnobLatencyAddMs: f.AddMs,
	})
}

func (f *ModelLatency) Revert(ctx context.Context, env Env) error {
	return f.revertKnobs(ctx, env, f.Name())
}

func (f *ModelLatency) Detail() string {
	s := "×" + fmtNum(f.Multiplier)
	if f.AddMs > 0 {
		s += " +" + fmtNum(f.AddMs) + "ms"
	}
	return s + " " + f.Node.String() + f.errSuffix()
}

// ModelSlots changes how many requests a node serves at once.
type ModelSlots struct {
	Node  NodeSet `json:"node"`  // 0-based node, -1 for every node, or a list of nodes
	Slots int     `json:"slots"` // 1..100000
	knobState
}

// NewModelSlots returns model_slots with defaults: every node down to 4 slots.
func NewModelSlots() *ModelSlots { return &ModelSlots{Node: AllNodes(), Slots: 4} }

func (*ModelSlots) Name() string { return "model_slots" }
func (*ModelSlots) Description() string {
	return "model nodes serve fewer requests at once (slots)"
}

func (f *ModelSlots) checkTargets(t Topology) error { return f.Node.check(f.Name(), t.Nodes) }

func (f *ModelSlots) Validate() error {
	if err := f.Node.validate(f.Name()); err != nil {
		return err
	}
	if f.Slots < 1 || f.Slots > 100000 {
		return paramErr(f.Name(), "slots", "must be within [1, 100000], got %d", f.Slots)
	}
	return nil
}

func (f *ModelSlots) Apply(ctx context.Context, env Env) error {
	return f.applyKnobs(ctx, env, f.Name(), f.Node, map[string]any{wire.KnobSlots: f.Slots})
}

func (f *ModelSlots) Revert(ctx context.Context, env Env) error {
	return f.revertKnobs(ctx, env, f.Name())
}

func (f *ModelSlots) Detail() string {
	return fmt.Sprintf("%d slots %s", f.Slots, f.Node.String()) + f.errSuffix()
}

// NodeHang makes a node accept requests and never answer them.
type NodeHang struct {
	Node     NodeSet `json:"node"`      // 0-based node, -1 for every node, or a list of nodes
	HangRate float64 `json:"hang_rate"` // share of requests that hang, (0, 1]
	knobState
}

// NewNodeHang returns node_hang with defaults: node 0 hangs every request.
func NewNodeHang() *NodeHang { return &NodeHang{Node: Nodes(0), HangRate: 1} }

func (*NodeHang) Name() string { return "node_hang" }
func (*NodeHang) Description() string {
	return "a node accepts requests and never answers (hang_rate)"
}

func (f *NodeHang) checkTargets(t Topology) error { return f.Node.check(f.Name(), t.Nodes) }

func (f *NodeHang) Validate() error {
	if err := f.Node.validate(f.Name()); err != nil {
		return err
	}
	if !(f.HangRate > 0 && f.HangRate <= 1) {
		return paramErr(f.Name(), "hang_rate", "must be within (0, 1], got %v", f.HangRate)
	}
	return nil
}

func (f *NodeHang) Apply(ctx context.Context, env Env) error {
	return f.applyKnobs(ctx, env, f.Name(), f.Node, map[string]any{wire.KnobHangRate: f.HangRate})
}

func (f *NodeHang) Revert(ctx context.Context, env Env) error {
	return f.revertKnobs(ctx, env, f.Name())
}

func (f *NodeHang) Detail() string {
	s := f.Node.String()
	if f.HangRate < 1 {
		s += " " + fmtNum(f.HangRate*100) + "%"
	}
	return s + f.errSuffix()
}

// ModelErrors makes nodes fail a share of requests with a 5xx. It combines
// with NodeHang: a node draws the hang first, then fails error_rate of the
// requests that did not hang.
type ModelErrors struct {
	Node      NodeSet `json:"node"`       // 0-based node, -1 for every node, or a list of nodes
	ErrorRate float64 `json:"error_rate"` // (0, 1]
	knobState
}

// NewModelErrors returns model_errors with defaults: every node fails 50 %.
func NewModelErrors() *ModelErrors { return &ModelErrors{Node: AllNodes(), ErrorRate: 0.5} }

func (*ModelErrors) Name() string { return "model_errors" }
func (*ModelErrors) Description() string {
	return "model nodes fail a share of requests (error_rate)"
}

func (f *ModelErrors) checkTargets(t Topology) error { return f.Node.check(f.Name(), t.Nodes) }

func (f *ModelErrors) Validate() error {
	if err := f.Node.validate(f.Name()); err != nil {
		return err
	}
	if !(f.ErrorRate > 0 && f.ErrorRate <= 1) {
		return paramErr(f.Name(), "error_rate", "must be within (0, 1], got %v", f.ErrorRate)
	}
	return nil
}

func (f *ModelErrors) Apply(ctx context.Context, env Env) error {
	return f.applyKnobs(ctx, env, f.Name(), f.Node, map[string]any{wire.KnobErrorRate: f.ErrorRate})
}

func (f *ModelErrors) Revert(ctx context.Context, env Env) error {
	return f.revertKnobs(ctx, env, f.Name())
}

func (f *ModelErrors) Detail() string {
	return fmtNum(f.ErrorRate*100) + "% " + f.Node.String() + f.errSuffix()
}
