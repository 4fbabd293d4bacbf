package admit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Signals are the overload measurements the Guard compares with its
// thresholds.
type Signals struct {
	// LagMs is the lag probe's p99 oversleep over the recent window.
	LagMs float64 `yaml:"lag_ms" json:"lag_ms"`
	// SchedMs is the p99 of runtime/metrics /sched/latencies:seconds (time
	// goroutines spent runnable before running) over the recent window.
	SchedMs float64 `yaml:"sched_ms" json:"sched_ms"`
	// GCPauseMs is the p99 of /sched/pauses/total/gc:seconds over the
	// recent window (0 when no GC ran).
	GCPauseMs float64 `yaml:"gc_pause_ms" json:"gc_pause_ms"`
	// HeapBytes is the live heap (/gc/heap/live:bytes, as of the last GC;
	// before the first GC, /memory/classes/heap/objects:bytes).
	HeapBytes uint64 `yaml:"heap_bytes" json:"heap_bytes"`
	// Inflight is the gateway's requests in flight (supplied by the gateway).
	Inflight int64 `yaml:"inflight" json:"inflight"`
	// QueueFill is the fullest bulkhead queue's fill, 0..1 (gateway).
	QueueFill float64 `yaml:"queue_fill" json:"queue_fill"`
	// UpstreamLatencyRatio is the recent upstream p99 / its baseline (gateway).
	UpstreamLatencyRatio float64 `yaml:"upstream_latency_ratio" json:"upstream_latency_ratio"`
	// Backpressure is the share (0..1) of model nodes whose answers
	// recently carried their backpressure signal (gateway; seed 004).
	Backpressure float64 `yaml:"backpressure" json:"backpressure"`
}

// Thresholds set, per level, the signal values that raise the Guard to
// that level: a level is reached when any of its non-zero fields is met
// (signal ≥ threshold). A zero field means the signal is not used at that
// level.
type Thresholds struct {
	Yellow Signals `yaml:"yellow" json:"yellow"`
	Red    Signals `yaml:"red" json:"red"`
	Black  Signals `yaml:"black" json:"black"`
}

// signalNames lists the Signals fields in order, for messages.
var signalNames = [...]string{"lag_ms", "sched_ms", "gc_pause_ms", "heap_bytes", "inflight", "queue_fill", "upstream_latency_ratio", "backpressure"}

// values returns s's fields in signalNames order.
func (s *Signals) values() [len(signalNames)]float64 {
	return [...]float64{s.LagMs, s.SchedMs, s.GCPauseMs, float64(s.HeapBytes), float64(s.Inflight), s.QueueFill, s.UpstreamLatencyRatio, s.Backpressure}
}

// Validate reports the first invalid threshold, naming it: values must be
// finite and ≥ 0, queue_fill ≤ 1, and a signal set at several levels must
// not decrease from yellow to red to black.
func (t Thresholds) Validate() error {
	levels := [...]struct {
		name string
		s    *Signals
	}{{"yellow", &t.Yellow}, {"red", &t.Red}, {"black", &t.Black}}
	var prev [len(signalNames)]float64
	var prevLevel [len(signalNames)]string
	for _, l := range levels {
		v := l.s.values()
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return fmt.Errorf("admit: threshold %s.%s: %v, want a finite value ≥ 0", l.name, signalNames[i], x)
			}
			if (signalNames[i] == "queue_fill" || signalNames[i] == "backpressure") && x > 1 {
				return fmt.Errorf("admit: threshold %s.%s: %v, want a fill in [0, 1]", l.name, signalNames[i], x)
			}
			if x == 0 {
				continue
			}
			if prevLevel[i] != "" && x < prev[i] {
				return fmt.Errorf("admit: threshold %s.%s: %v is below %s.%s %v, want non-decreasing levels", l.name, signalNames[i], x, prevLevel[i], signalNames[i], prev[i])
			}
			prev[i], prevLevel[i] = x, l.name
		}
	}
	return nil
}

// classify returns the highest level whose thresholds s meets, and why.
func (t *Thresholds) classify(s *Signals) (Level, string) {
	v := s.values()
	for lvl := Black; lvl >= Yellow; lvl-- {
		th := [...]*Signals{&t.Yellow, &t.Red, &t.Black}[lvl-1].values()
		for i, x := range th {
			if x > 0 && v[i] >= x {
				return lvl, fmt.Sprintf("%s %.4g ≥ %.4g (%s)", signalNames[i], v[i], x, lvl)
			}
		}
	}
	return Green, ""
}

// GuardStats is a snapshot of a Guard.
type GuardStats struct {
	Level        Level   `json:"level"`
	Forced       bool    `json:"forced"`
	LagP50Ms     float64 `json:"lag_p50_ms"`
	LagP99Ms     float64 `json:"lag_p99_ms"`
	SchedP99Ms   float64 `json:"sched_p99_ms"`
	GCPauseP99Ms float64 `json:"gc_pause_p99_ms"`
	HeapBytes    uint64  `json:"heap_bytes"`
	// Signals is the last evaluated set (internal and external).
	Signals Signals `json:"signals"`
	// Reason names the signal and threshold that set the current level
	// ("" at green; "forced" when forced).
	Reason string `json:"reason"`
}

// GuardOption configures a Guard.
type GuardOption func(*Guard)

// WithExternal supplies the signals the gateway measures: Inflight,
// QueueFill, UpstreamLatencyRatio and Backpressure are taken from f (its
// other fields are ignored). f is called on each evaluation and must not block.
func WithExternal(f func() Signals) GuardOption { return func(g *Guard) { g.external = f } }

// WithSource replaces the Guard's own measurements (LagMs, SchedMs,
// GCPauseMs, HeapBytes) with f, for tests and simulations that must not
// depend on machine load. Run then starts no probe.
func WithSource(f func() Signals) GuardOption { return func(g *Guard) { g.source = f } }

// WithProbeInterval sets the lag probe's period (default 10ms; values ≤ 0
// keep the default).
func WithProbeInterval(d time.Duration) GuardOption {
	return func(g *Guard) {
		if d > 0 {
			g.probeEvery = d
		}
	}
}

// WithHold sets the hysteresis: the level rises at once but falls only
// after the signals have stayed below it for d (default 2s; d < 0 means 0).
func WithHold(d time.Duration) GuardOption {
	return func(g *Guard) { g.hold = max(d, 0) }
}

// WithWindow sets the recent window over which lag, scheduler and GC
// quantiles are computed (default 1s; values ≤ 0 keep the default).
func WithWindow(d time.Duration) GuardOption {
	return func(g *Guard) {
		if d > 0 {
			g.window = d
		}
	}
}

// WithEvalInterval sets how often Run re-evaluates the level (default
// 100ms; values ≤ 0 keep the default).
func WithEvalInterval(d time.Duration) GuardOption {
	return func(g *Guard) {
		if d > 0 {
			g.evalEvery = d
		}
	}
}

// Guard turns overload signals into a Level. Level and Admit are atomic
// loads: they never block and never allocate. Run measures and evaluates;
// without Run, call Evaluate.
type Guard struct {
	level  atomic.Int32 // the effective level (forced, or computed)
	forced atomic.Int32 // -1: not forced

	// Fixed at construction.
	external   func() Signals
	source     func() Signals
	probeEvery time.Duration
	hold       time.Duration
	window     time.Duration
	evalEvery  time.Duration

	mu       sync.Mutex
	th       Thresholds // guarded by mu
	computed Level      // guarded by mu; level from signals, with hysteresis
	pending  Level      // guarded by mu; highest raw level since falling began
	fallFrom time.Time  // guarded by mu; zero when not falling
	reason   string     // guarded by mu
	last     Signals    // guarded by mu
	lagP50   float64    // guarded by mu
	sampler  *sampler   // guarded by mu; nil without Run
}

// NewGuard returns a Guard at green with thresholds th. It does not check
// th: validate configuration with Thresholds.Validate first (SetThresholds
// does). The zero Thresholds never leave green.
func NewGuard(th Thresholds, opts ...GuardOption) *Guard {
	g := &Guard{
		th:         th,
		probeEvery: 10 * time.Millisecond,
		hold:       2 * time.Second,
		window:     time.Second,
		evalEvery:  100 * time.Millisecond,
	}
	g.forced.Store(-1)
	for _, o := range opts {
		o(g)
	}
	return g
}

// Level returns the current level.
func (g *Guard) Level() Level { return Level(g.level.Load()) }

// Admit reports whether a request of priority p passes at the current level.
func (g *Guard) Admit(p Priority) bool { return Level(g.level.Load()).Admits(p) }

// SetThresholds replaces the thresholds; the next evaluation uses them.
func (g *Guard) SetThresholds(th Thresholds) error {
	if err := th.Validate(); err != nil {
		return err
	}
	g.mu.Lock()
	g.th = th
	g.mu.Unlock()
	return nil
}

// Thresholds returns the current thresholds.
func (g *Guard) Thresholds() Thresholds {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.th
}

// SetForced pins the level to *l (for tests and the admin API); nil
// returns to the computed level. An invalid level is ignored.
func (g *Guard) SetForced(l *Level) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l == nil {
		g.forced.Store(-1)
		g.level.Store(int32(g.computed))
		return
	}
	if !l.Valid() {
		return
	}
	g.forced.Store(int32(*l))
	g.level.Store(int32(*l))
}

// Evaluate samples the signals and updates the level as of now. Run calls
// it every evaluation interval; it may also be called directly (tests,
// simulations) with synthetic times.
func (g *Guard) Evaluate(now time.Time) Level {
	var s Signals
	g.mu.Lock()
	sm := g.sampler
	g.mu.Unlock()
	var lagP50 float64
	switch {
	case g.source != nil:
		s = g.source()
	case sm != nil:
		s, lagP50 = sm.sample()
	}
	if g.external != nil {
		e := g.external()
		s.Inflight, s.QueueFill, s.UpstreamLatencyRatio = e.Inflight, e.QueueFill, e.UpstreamLatencyRatio
		s.Backpressure = e.Backpressure
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	g.last, g.lagP50 = s, lagP50
	raw, why := g.th.classify(&s)
	switch {
	case raw >= g.computed:
		g.computed, g.fallFrom, g.reason = raw, time.Time{}, why
	default: // below the current level: fall only after hold
		if g.fallFrom.IsZero() {
			g.fallFrom, g.pending = now, raw
		} else if raw > g.pending {
			g.pending = raw
		}
		if now.Sub(g.fallFrom) >= g.hold {
			g.computed, g.fallFrom = g.pending, time.Time{}
			_, g.reason = g.th.classify(&s)
			if g.computed != raw {
				g.reason = fmt.Sprintf("holding %s", g.computed)
			}
		}
	}
	if g.forced.Load() < 0 {
		g.level.Store(int32(g.computed))
	}
	return Level(g.level.Load())
}

// Snapshot returns the current level, the last signals and the reason.
func (g *Guard) Snapshot() GuardStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := GuardStats{
		Level:        Level(g.level.Load()),
		LagP50Ms:     g.lagP50,
		LagP99Ms:     g.last.LagMs,
		SchedP99Ms:   g.last.SchedMs,
		GCPauseP99Ms: g.last.GCPauseMs,
		HeapBytes:    g.last.HeapBytes,
		Signals:      g.last,
		Reason:       g.reason,
	}
	if g.forced.Load() >= 0 {
		st.Forced, st.Reason = true, "forced"
	}
	return st
}

// Run measures (unless WithSource was given: then it only evaluates) and
// evaluates the level every evaluation interval until ctx is done. It runs
// the lag probe on its own goroutine. Call it once.
func (g *Guard) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if g.source == nil {
		sm := newSampler(g.window, g.probeEvery, g.evalEvery)
		g.mu.Lock()
		g.sampler = sm
		g.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sm.probe(ctx)
		}()
	}
	t := time.NewTicker(g.evalEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case now := <-t.C:
			g.Evaluate(now)
		}
	}
}
