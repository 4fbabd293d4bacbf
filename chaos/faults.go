package chaos

import (
	"context"
	"errors"
	"fmt"

	"github.com/levee-lab/levee/internal/pressure"
	"github.com/levee-lab/levee/internal/wire"
)

// NodeKill SIGKILLs a node's process and restarts it after For (a pod
// that crashes and comes back). Revert restarts it at once.
type NodeKill struct {
	Node NodeSet  `json:"node"` // 0-based node, -1 for every node, or a list of nodes
	For  Duration `json:"for"`  // restart after this; 0 stays down until reverted
	state
	killed []int // guarded by state.mu
}

// NewNodeKill returns node_kill with defaults: node 0, back after 10 s.
func NewNodeKill() *NodeKill { return &NodeKill{Node: Nodes(0), For: Duration(10e9)} }

func (*NodeKill) Name() string        { return "node_kill" }
func (*NodeKill) Description() string { return "SIGKILL a model node; it restarts after `for`" }

// Effect is EffectNodeLoss: the node's process dies.
func (*NodeKill) Effect() Effect { return EffectNodeLoss }

func (f *NodeKill) checkTargets(t Topology) error { return f.Node.check(f.Name(), t.Nodes) }

func (f *NodeKill) Validate() error {
	if err := f.Node.validate(f.Name()); err != nil {
		return err
	}
	if f.For < 0 {
		return paramErr(f.Name(), "for", "must be ≥ 0, got %v", f.For.D())
	}
	return nil
}

func (f *NodeKill) Apply(ctx context.Context, env Env) error {
	return f.apply(func(gen uint64) error {
		nodes, err := f.Node.resolve(f.Name(), env)
		if err != nil {
			return err
		}
		f.killed = f.killed[:0]
		for _, i := range nodes {
			if err := env.KillNode(ctx, i); err != nil {
				return errors.Join(fmt.Errorf("chaos: node_kill: kill node %d: %w", i, err), f.restart(ctx, env))
			}
			f.killed = append(f.killed, i)
		}
		if f.For > 0 {
			f.expireAfter(env, f.For.D(), gen, func(ctx context.Context) error { return f.restart(ctx, env) })
		}
		return nil
	})
}

// restart brings back every killed node, forgetting those that came back.
// Called with state.mu held.
func (f *NodeKill) restart(ctx context.Context, env Env) error {
	var errs []error
	left := f.killed[:0]
	for _, i := range f.killed {
		if err := env.RestartNode(ctx, i); err != nil {
			errs = append(errs, fmt.Errorf("chaos: node_kill: restart node %d: %w", i, err))
			left = append(left, i)
		}
	}
	f.killed = left
	return errors.Join(errs...)
}

func (f *NodeKill) Revert(ctx context.Context, env Env) error {
	return f.revert(func() error { return f.restart(ctx, env) })
}

func (f *NodeKill) Detail() string {
	s := f.Node.String()
	if f.For > 0 {
		s += " for " + f.For.D().String()
	}
	return s + f.errSuffix()
}

// GCPressure makes a process allocate garbage (churn) and hold live memory
// (ballast), in the gateway or in model nodes.
type GCPressure struct {
	Target      string  `json:"target"`         // "gateway" or "node"
	Node        NodeSet `json:"node"`           // target node: 0-based node, -1 for every node, or a list of nodes
	ChurnMBPerS float64 `json:"churn_mb_per_s"` // garbage allocated per second, [0, pressure.MaxChurnMBPerS]
	BallastMB   float64 `json:"ballast_mb"`     // live heap held, [0, pressure.MaxBallastMB]
	knobState
}

// NewGCPressure returns gc_pressure with defaults: the gateway churns
// 200 MB/s over a 256 MB ballast.
func NewGCPressure() *GCPressure {
	return &GCPressure{Target: "gateway", Node: AllNodes(), ChurnMBPerS: 200, BallastMB: 256}
}

func (*GCPressure) Name() string { return "gc_pressure" }
func (*GCPressure) Description() string {
	return "garbage churn (MB/s) and a live ballast (MB) in the gateway or a node"
}

// checkTargets checks the node of a node-targeted gc_pressure.
func (f *GCPressure) checkTargets(t Topology) error {
	if f.Target != "node" {
		return nil
	}
	return f.Node.check(f.Name(), t.Nodes)
}

func (f *GCPressure) Validate() error {
	if f.Target != "gateway" && f.Target != "node" {
		return paramErr(f.Name(), "target", `must be "gateway" or "node", got %q`, f.Target)
	}
	if err := f.Node.validate(f.Name()); err != nil {
		return err
	}
	if !(f.ChurnMBPerS >= 0 && f.ChurnMBPerS <= pressure.MaxChurnMBPerS) {
		return paramErr(f.Name(), "churn_mb_per_s", "must be within [0, %d], got %v", pressure.MaxChurnMBPerS, f.ChurnMBPerS)
	}
	if !(f.BallastMB >= 0 && f.BallastMB <= pressure.MaxBallastMB) {
		return paramErr(f.Name(), "ballast_mb", "must be within [0, %d], got %v", pressure.MaxBallastMB, f.BallastMB)
	}
	if f.ChurnMBPerS == 0 && f.BallastMB == 0 {
		return paramErr(f.Name(), "churn_mb_per_s", "churn_mb_per_s and ballast_mb are both 0: the fault would do nothing")
	}
	return nil
}

func (f *GCPressure) Apply(ctx context.Context, env Env) error {
	patch := map[string]any{wire.KnobChurnMBPerS: f.ChurnMBPerS, wire.KnobBallastMB: f.BallastMB}
	if f.Target == "node" {
		return f.applyKnobs(ctx, env, f.Name(), f.Node, patch)
	}
	return f.apply(func(uint64) error {
		if err := env.PatchGatewayPressure(ctx, patch); err != nil {
			return errors.Join(fmt.Errorf("chaos: gc_pressure: gateway: %w", err),
				env.PatchGatewayPressure(ctx, gcPressureOff))
		}
		return nil
	})
}

func (f *GCPressure) Revert(ctx context.Context, env Env) error {
	if f.Target == "node" {
		return f.revertKnobs(ctx, env, f.Name())
	}
	return f.revert(func() error {
		if err := env.PatchGatewayPressure(ctx, gcPressureOff); err != nil {
			return fmt.Errorf("chaos: gc_pressure: gateway: %w", err)
		}
		return nil
	})
}

func (f *GCPressure) Detail() string {
	where := "gateway"
	if f.Target == "node" {
		where = f.Node.String()
	}
	return fmt.Sprintf("%s %sMB/s +%sMB", where, fmtNum(f.ChurnMBPerS), fmtNum(f.BallastMB)) + f.errSuffix()
}

// CPUHog runs busy goroutines in the gateway: bounded in number, each busy
// for Duty of the time and yielding, so the gateway's scheduler lags but
// never starves.
type CPUHog struct {
	Goroutines int     `json:"goroutines"` // [1, pressure.MaxCPUHogGoroutines]
	Duty       float64 `json:"duty"`       // share of each period spent busy, (0, pressure.MaxCPUHogDuty]
	state
}

// NewCPUHog returns cpu_hog with defaults: 2 goroutines at 50 % duty.
func NewCPUHog() *CPUHog { return &CPUHog{Goroutines: 2, Duty: 0.5} }

func (*CPUHog) Name() string { return "cpu_hog" }
func (*CPUHog) Description() string {
	return "busy goroutines in the gateway (bounded, yielding): scheduler lag"
}

func (f *CPUHog) Validate() error {
	if f.Goroutines < 1 || f.Goroutines > pressure.MaxCPUHogGoroutines {
		return paramErr(f.Name(), "goroutines", "must be within [1, %d], got %d", pressure.MaxCPUHogGoroutines, f.Goroutines)
	}
	if !(f.Duty > 0 && f.Duty <= pressure.MaxCPUHogDuty) {
		return paramErr(f.Name(), "duty", "must be within (0, %v], got %v", pressure.MaxCPUHogDuty, f.Duty)
	}
	return nil
}

var cpuHogOff = map[string]any{wire.KnobCPUHogGoroutines: 0, wire.KnobCPUHogDuty: 0}

var gcPressureOff = map[string]any{wire.KnobChurnMBPerS: 0, wire.KnobBallastMB: 0}

func (f *CPUHog) Apply(ctx context.Context, env Env) error {
	return f.apply(func(uint64) error {
		if err := env.PatchGatewayPressure(ctx, map[string]any{wire.KnobCPUHogGoroutines: f.Goroutines, wire.KnobCPUHogDuty: f.Duty}); err != nil {
			return errors.Join(fmt.Errorf("chaos: cpu_hog: gateway: %w", err), env.PatchGatewayPressure(ctx, cpuHogOff))
		}
		return nil
	})
}

func (f *CPUHog) Revert(ctx context.Context, env Env) error {
	return f.revert(func() error {
		if err := env.PatchGatewayPressure(ctx, cpuHogOff); err != nil {
			return fmt.Errorf("chaos: cpu_hog: gateway: %w", err)
		}
		return nil
	})
}

func (f *CPUHog) Detail() string {
	return fmt.Sprintf("%d × %s%%", f.Goroutines, fmtNum(f.Duty*100)) + f.errSuffix()
}

// SlowClients makes a share of the generator's stream and export readers
// read at KBps, like clients on a bad link.
type SlowClients struct {
	Share float64 `json:"share"` // (0, 1]
	KBps  float64 `json:"kbps"`  // KB/s, (0, 1e6]
	state
}

// NewSlowClients returns slow_clients with defaults: half the readers at 1 KB/s.
func NewSlowClients() *SlowClients { return &SlowClients{Share: 0.5, KBps: 1} }

func (*SlowClients) Name() string { return "slow_clients" }
func (*SlowClients) Description() string {
	return "a share of stream/export clients read at a few KB/s"
}

func (f *SlowClients) Validate() error {
	if !(f.Share > 0 && f.Share <= 1) {
		return paramErr(f.Name(), "share", "must be within (0, 1], got %v", f.Share)
	}
	if !(f.KBps > 0 && f.KBps <= 1e6) {
		return paramErr(f.Name(), "kbps", "must be within (0, 1000000], got %v", f.KBps)
	}
	return nil
}

func (f *SlowClients) Apply(_ context.Context, env Env) error {
	return f.apply(func(uint64) error { env.SetSlowClients(f.Share, f.KBps); return nil })
}

func (f *SlowClients) Revert(_ context.Context, env Env) error {
	return f.revert(func() error { env.SetSlowClients(0, 0); return nil })
}

func (f *SlowClients) Detail() string {
	return fmt.Sprintf("%s%% at %s KB/s", fmtNum(f.Share*100), fmtNum(f.KBps))
}

// TrafficSpike multiplies the generator's rate by Factor for For.
type TrafficSpike struct {
	Factor float64  `json:"factor"` // (0, 100]
	For    Duration `json:"for"`    // back to normal after this; 0 lasts until reverted
	state
}

// NewTrafficSpike returns traffic_spike with defaults: × 3 for 10 s.
func NewTrafficSpike() *TrafficSpike { return &TrafficSpike{Factor: 3, For: Duration(10e9)} }

func (*TrafficSpike) Name() string        { return "traffic_spike" }
func (*TrafficSpike) Description() string { return "offered load × factor for a while" }

func (f *TrafficSpike) Validate() error {
	if !(f.Factor > 0 && f.Factor <= 100) {
		return paramErr(f.Name(), "factor", "must be within (0, 100], got %v", f.Factor)
	}
	if f.For < 0 {
		return paramErr(f.Name(), "for", "must be ≥ 0, got %v", f.For.D())
	}
	return nil
}

func (f *TrafficSpike) Apply(_ context.Context, env Env) error {
	return f.apply(func(gen uint64) error {
		env.SetRateFactor(f.Factor)
		if f.For > 0 {
			f.expireAfter(env, f.For.D(), gen, func(context.Context) error { env.SetRateFactor(1); return nil })
		}
		return nil
	})
}

func (f *TrafficSpike) Revert(_ context.Context, env Env) error {
	return f.revert(func() error { env.SetRateFactor(1); return nil })
}

func (f *TrafficSpike) Detail() string {
	s := "×" + fmtNum(f.Factor)
	if f.For > 0 {
		s += " for " + f.For.D().String()
	}
	return s
}

// RedisOutage stops the lab's Redis (the shared rate-limit store) and
// brings it back after For.
type RedisOutage struct {
	For Duration `json:"for"` // restart after this; 0 stays down until reverted
	state
}

// NewRedisOutage returns redis_outage with defaults: down for 10 s.
func NewRedisOutage() *RedisOutage { return &RedisOutage{For: Duration(10e9)} }

func (*RedisOutage) Name() string        { return "redis_outage" }
func (*RedisOutage) labRedis() RedisNeed { return RedisNeedSingle }
func (*RedisOutage) Description() string { return "stop Redis (shared rate-limit store) for a while" }

func (f *RedisOutage) Validate() error {
	if f.For < 0 {
		return paramErr(f.Name(), "for", "must be ≥ 0, got %v", f.For.D())
	}
	return nil
}

func (f *RedisOutage) Apply(ctx context.Context, env Env) error {
	return f.apply(func(gen uint64) error {
		if err := env.KillRedis(ctx); err != nil {
			return fmt.Errorf("chaos: redis_outage: %w", err)
		}
		if f.For > 0 {
			f.expireAfter(env, f.For.D(), gen, func(ctx context.Context) error { return f.restart(ctx, env) })
		}
		return nil
	})
}

func (f *RedisOutage) restart(ctx context.Context, env Env) error {
	if err := env.RestartRedis(ctx); err != nil {
		return fmt.Errorf("chaos: redis_outage: restart: %w", err)
	}
	return nil
}

func (f *RedisOutage) Revert(ctx context.Context, env Env) error {
	return f.revert(func() error { return f.restart(ctx, env) })
}

func (f *RedisOutage) Detail() string {
	s := "down"
	if f.For > 0 {
		s += " for " + f.For.D().String()
	}
	return s + f.errSuffix()
}

// RedisMasterKill SIGKILLs one master of the lab's Redis Cluster; with
// replicas, one of the killed master's replicas takes its slots over (the
// lab records the failover: which node, how long). After For the killed
// node starts again and rejoins the cluster as a replica.
type RedisMasterKill struct {
	// Master is the 0-based rank of the master among the masters in slot
	// order, or -1 for the master holding the most keys at the kill (the
	// one whose loss affects the most limits).
	Master int      `json:"master"`
	For    Duration `json:"for"` // restart the killed node after this; 0 stays down until reverted
	state
	killed int // node index of the killed master, -1 when none; guarded by state.mu
}

// NewRedisMasterKill returns redis_master_kill with defaults: the busiest
// master, back after 10 s.
func NewRedisMasterKill() *RedisMasterKill {
	return &RedisMasterKill{Master: -1, For: Duration(10e9), killed: -1}
}

func (*RedisMasterKill) Name() string        { return "redis_master_kill" }
func (*RedisMasterKill) labRedis() RedisNeed { return RedisNeedCluster }
func (*RedisMasterKill) Description() string {
	return "SIGKILL one master of the Redis Cluster (a replica takes over); it rejoins after `for`"
}

// checkTargets checks the master's rank against the cluster's masters.
func (f *RedisMasterKill) checkTargets(t Topology) error {
	if t.RedisMasters > 0 && f.Master >= t.RedisMasters {
		return paramErr(f.Name(), "master", "master %d does not exist (the cluster has %d masters: 0..%d, or -1 for the busiest)", f.Master, t.RedisMasters, t.RedisMasters-1)
	}
	return nil
}

func (f *RedisMasterKill) Validate() error {
	if f.Master < -1 {
		return paramErr(f.Name(), "master", "must be ≥ 0, or -1 for the master holding the most keys, got %d", f.Master)
	}
	if f.For < 0 {
		return paramErr(f.Name(), "for", "must be ≥ 0, got %v", f.For.D())
	}
	return nil
}

func (f *RedisMasterKill) Apply(ctx context.Context, env Env) error {
	return f.apply(func(gen uint64) error {
		node, err := env.KillRedisMaster(ctx, f.Master)
		if err != nil {
			return fmt.Errorf("chaos: redis_master_kill: %w", err)
		}
		f.killed = node
		if f.For > 0 {
			f.expireAfter(env, f.For.D(), gen, func(ctx context.Context) error { return f.restart(ctx, env) })
		}
		return nil
	})
}

// restart brings the killed node back; called with state.mu held.
func (f *RedisMasterKill) restart(ctx context.Context, env Env) error {
	if f.killed < 0 {
		return nil
	}
	if err := env.RestartRedisNode(ctx, f.killed); err != nil {
		return fmt.Errorf("chaos: redis_master_kill: restart node %d: %w", f.killed, err)
	}
	f.killed = -1
	return nil
}

func (f *RedisMasterKill) Revert(ctx context.Context, env Env) error {
	return f.revert(func() error { return f.restart(ctx, env) })
}

func (f *RedisMasterKill) Detail() string {
	s := "busiest master"
	if f.Master >= 0 {
		s = fmt.Sprintf("master %d", f.Master)
	}
	if f.For > 0 {
		s += " for " + f.For.D().String()
	}
	return s + f.errSuffix()
}
