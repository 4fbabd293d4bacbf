package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
)

// fakeEnv records what faults do and keeps the state a real lab would: node
// knobs (a restarted node comes back with its original knobs, as a fresh
// process does), which nodes are up, gateway pressure, rate factor, slow
// clients and Redis. After runs f on a real timer unless manualAfter is set.
type fakeEnv struct {
	mu         sync.Mutex
	nodes      int
	knobs      []map[string]any
	up         []bool
	pressure   map[string]any
	rateFactor float64
	slowShare  float64
	slowKBps   float64
	redisUp    bool
	masterDown int // the killed cluster master, -1 when none
	calls      []string
	violations []string // things a correct fault never does

	failPatch map[int]bool // PatchNodeKnobs on these nodes fails

	manualAfter bool
	pending     []func() // with manualAfter: callbacks not run yet
	afterWG     sync.WaitGroup
}

func originalKnobs() map[string]any {
	return map[string]any{
		"latency_multiplier": 1.0, "latency_add_ms": 0.0, "slots": 16, "error_rate": 0.0,
		"hang_rate": 0.0, "churn_mb_per_s": 0.0, "ballast_mb": 0.0, "tokens_per_s": 50.0,
	}
}

func originalPressure() map[string]any {
	return map[string]any{"churn_mb_per_s": 0, "ballast_mb": 0, "cpu_hog_goroutines": 0, "cpu_hog_duty": 0}
}

func newFakeEnv(nodes int) *fakeEnv {
	e := &fakeEnv{nodes: nodes, pressure: originalPressure(), rateFactor: 1, redisUp: true, masterDown: -1, failPatch: map[int]bool{}}
	for range nodes {
		e.knobs = append(e.knobs, originalKnobs())
		e.up = append(e.up, true)
	}
	return e
}

func (e *fakeEnv) record(format string, args ...any) {
	e.calls = append(e.calls, fmt.Sprintf(format, args...))
}

func (e *fakeEnv) NodeCount() int { return e.nodes }

func (e *fakeEnv) PatchNodeKnobs(_ context.Context, node int, patch map[string]any) (map[string]any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("patch %d %v", node, patch)
	if node < 0 || node >= e.nodes {
		e.violations = append(e.violations, fmt.Sprintf("patch of node %d", node))
		return nil, errors.New("no such node")
	}
	if !e.up[node] {
		return nil, fmt.Errorf("node %d is down", node)
	}
	if e.failPatch[node] {
		return nil, fmt.Errorf("node %d: injected failure", node)
	}
	before := maps.Clone(e.knobs[node])
	for k, v := range patch {
		e.knobs[node][k] = normalize(v)
	}
	return before, nil
}

// normalize makes numbers comparable whatever their Go type.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	return v
}

func (e *fakeEnv) KillNode(_ context.Context, node int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("kill %d", node)
	if !e.up[node] {
		return fmt.Errorf("node %d is not running", node)
	}
	e.up[node] = false
	return nil
}

func (e *fakeEnv) RestartNode(_ context.Context, node int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("restart %d", node)
	if e.up[node] {
		e.violations = append(e.violations, fmt.Sprintf("restart of running node %d", node))
		return fmt.Errorf("node %d is running", node)
	}
	e.up[node] = true
	e.knobs[node] = originalKnobs()
	return nil
}

func (e *fakeEnv) PatchGatewayPressure(_ context.Context, patch map[string]any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("pressure %v", patch)
	for k, v := range patch {
		e.pressure[k] = normalize(v)
	}
	return nil
}

func (e *fakeEnv) SetRateFactor(f float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("rate ×%v", f)
	e.rateFactor = f
}

func (e *fakeEnv) SetSlowClients(share, kbps float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("slow %v %v", share, kbps)
	e.slowShare, e.slowKBps = share, kbps
}

func (e *fakeEnv) KillRedis(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("kill redis")
	if !e.redisUp {
		return errors.New("redis is not running")
	}
	e.redisUp = false
	return nil
}

func (e *fakeEnv) RestartRedis(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("restart redis")
	if e.redisUp {
		e.violations = append(e.violations, "restart of running redis")
		return errors.New("redis is running")
	}
	e.redisUp = true
	return nil
}

func (e *fakeEnv) KillRedisMaster(_ context.Context, master int) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("kill redis master %d", master)
	if e.masterDown >= 0 {
		e.violations = append(e.violations, "second master kill before a restart")
	}
	node := 7 // a node index unlike the rank, so a fault mixing them up shows
	if master >= 0 {
		node = 10 + master
	}
	e.masterDown = node
	return node, nil
}

func (e *fakeEnv) RestartRedisNode(_ context.Context, node int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("restart redis node %d", node)
	if node != e.masterDown {
		e.violations = append(e.violations, fmt.Sprintf("restart of redis node %d, killed %d", node, e.masterDown))
		return errors.New("that node is running")
	}
	e.masterDown = -1
	return nil
}

func (e *fakeEnv) After(d time.Duration, f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record("after %v", d)
	if e.manualAfter {
		e.pending = append(e.pending, f)
		return
	}
	e.afterWG.Add(1)
	time.AfterFunc(d, func() { defer e.afterWG.Done(); f() })
}

// fire runs the pending After callbacks (manualAfter mode).
func (e *fakeEnv) fire() {
	e.mu.Lock()
	p := e.pending
	e.pending = nil
	e.mu.Unlock()
	for _, f := range p {
		f()
	}
}

func (e *fakeEnv) callCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.calls)
}

// pristine reports how the env differs from its original state ("" when it
// does not).
func (e *fakeEnv) pristine() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var diffs []string
	for i := range e.nodes {
		if !e.up[i] {
			diffs = append(diffs, fmt.Sprintf("node %d down", i))
		}
		orig := originalKnobs()
		for k, v := range orig {
			if normalize(e.knobs[i][k]) != normalize(v) {
				diffs = append(diffs, fmt.Sprintf("node %d %s = %v, want %v", i, k, e.knobs[i][k], v))
			}
		}
	}
	for k, v := range originalPressure() {
		if normalize(e.pressure[k]) != normalize(v) {
			diffs = append(diffs, fmt.Sprintf("pressure %s = %v", k, e.pressure[k]))
		}
	}
	if e.rateFactor != 1 {
		diffs = append(diffs, fmt.Sprintf("rate factor %v", e.rateFactor))
	}
	if e.slowShare != 0 {
		diffs = append(diffs, fmt.Sprintf("slow clients %v", e.slowShare))
	}
	if !e.redisUp {
		diffs = append(diffs, "redis down")
	}
	if e.masterDown >= 0 {
		diffs = append(diffs, fmt.Sprintf("redis cluster node %d down", e.masterDown))
	}
	diffs = append(diffs, e.violations...)
	return fmt.Sprint(diffs)[1 : len(fmt.Sprint(diffs))-1]
}
