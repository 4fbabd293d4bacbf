package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Fault is one kind of trouble, in the manner of Toxiproxy's toxics. A
// Fault value carries its parameters as JSON-tagged exported fields (set to
// defaults by its constructor) and its applied state, which it guards itself.
//
// Apply and Revert are idempotent: applying an applied fault or reverting a
// reverted one does nothing and returns nil. A fault with a duration (node_kill,
// traffic_spike, redis_outage with for > 0) reverts itself through env.After;
// Active then turns false. Apply and Revert of one fault are serialized; all
// methods are safe for concurrent use.
type Fault interface {
	// Name is the catalogue name, e.g. "model_latency".
	Name() string
	// Description is one line for the catalogue.
	Description() string
	// Validate reports the first bad parameter, naming its JSON field.
	Validate() error
	// Apply injects the fault through env. On error nothing stays applied
	// (what was changed is undone as far as env allows).
	Apply(ctx context.Context, env Env) error
	// Revert undoes Apply, restoring what Apply saved.
	Revert(ctx context.Context, env Env) error
	// Active reports whether the fault is applied now.
	Active() bool
	// Detail is a short human text of the parameters, e.g. "×3 all nodes".
	Detail() string
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("10s", "500ms"). A bare number is rejected: its unit would be a guess.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string such as "10s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"10s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// ParamError names the parameter that is wrong.
type ParamError struct {
	Fault string // fault name
	Field string // JSON name of the parameter
	Msg   string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("chaos: %s: %s: %s", e.Fault, e.Field, e.Msg)
}

func paramErr(fault, field, format string, args ...any) error {
	return &ParamError{Fault: fault, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Topology is the shape of a lab as its experiment declares it, known
// before the lab starts: what a fault's parameters may name.
type Topology struct {
	// Nodes is the number of fake model nodes (≥ 1).
	Nodes int
	// RedisMasters is the number of masters of the lab's Redis Cluster;
	// 0 when the lab runs no cluster (the check is then left to Apply).
	RedisMasters int
}

// targetChecker is implemented by faults whose parameters name a part of
// the lab (a node, a Redis master).
type targetChecker interface{ checkTargets(t Topology) error }

// CheckTargets reports a parameter of f that names a node or Redis master
// a lab shaped t will not have — the check Apply makes against the running
// lab, made before the run so that a bad step fails at load time. The
// error is a *ParamError naming the parameter. Faults whose parameters
// name no part of the lab pass.
func CheckTargets(f Fault, t Topology) error {
	if c, ok := f.(targetChecker); ok {
		return c.checkTargets(t)
	}
	return nil
}

// fmtNum prints a float without trailing zeros.
func fmtNum(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// Effect is what a fault does to the lab's capacity, for the figures that
// depend on it (a run's limit settle time after a node loss). The lab asks
// the catalogue (Registry.Effect) rather than knowing fault names.
type Effect string

const (
	// EffectNone: the fault leaves the nodes' capacity as it is, or changes
	// it only through their knobs.
	EffectNone Effect = ""
	// EffectNodeLoss: the fault takes model nodes away (their processes
	// die); a limit has to settle to the slots left.
	EffectNodeLoss Effect = "node_loss"
)

// effector is implemented by faults whose Effect is not EffectNone.
type effector interface{ Effect() Effect }

// RedisNeed is the Redis a fault acts on, of those the lab can run.
type RedisNeed string

// Redis needs.
const (
	// RedisNeedNone: the fault does not act on Redis.
	RedisNeedNone RedisNeed = ""
	// RedisNeedSingle: one Redis server child (server or embedded).
	RedisNeedSingle RedisNeed = "single"
	// RedisNeedCluster: a Redis Cluster of redis-server children.
	RedisNeedCluster RedisNeed = "cluster"
)

// labRedisUser is implemented by faults that act on a Redis the lab runs
// (its child server or its cluster's nodes): a lab that runs none — no
// Redis, or an external one — or one of the other shape cannot apply them.
type labRedisUser interface{ labRedis() RedisNeed }
