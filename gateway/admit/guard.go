package admit

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// LevelChange records one change of a Guard's level and what caused it.
type LevelChange struct {
	// Seq numbers changes from 1; a reader that saw Seq n missed none
	// when the next one it sees is n+1.
	Seq  uint64    `json:"seq"`
	At   time.Time `json:"at"`
	From Level     `json:"from"`
	To   Level     `json:"to"`
	// Signal, Value and Threshold name the signal that moved the level
	// (Signal is "" when the level fell because every signal was below
	// its release mark, and "forced" when forced).
	Signal    string  `json:"signal"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	// Shed is the shed level after the change (see ShedShare).
	Shed float64 `json:"shed"`
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
	// Shed is the shed level (see ShedShare); ShedShare its share of each
	// priority refused.
	Shed      float64                `json:"shed"`
	ShedShare [NumPriorities]float64 `json:"shed_share"`
	// Changes are the latest level changes, oldest first (at most
	// keepChanges); ChangeSeq is the last one's Seq.
	Changes   []LevelChange `json:"changes"`
	ChangeSeq uint64        `json:"change_seq"`
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

// WithHold sets the cooldown (default 2s; d < 0 means 0): the shed level
// falls by one priority per half cooldown once every signal is below its
// release mark, and rises by one per cooldown at full severity. 0 makes
// the level follow the watermarks at once (green below yellow, all P2 shed
// at yellow, all P1 at red, everything at black), for tests.
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

// Guard turns overload signals into a shed level and a Level. The
// upstream latency ratio counts only while requests wait in a bulkhead
// queue (QueueFill > 0). It sheds only the excess: while a signal is past its yellow watermark the shed
// level rises (faster the further past), first through P2 (a share of
// P2, then all of it), then through P1; a signal at red sheds every P2 at
// once; P0 is shed only at black, which refuses everything. Once every
// signal is below releaseShare of its watermark the level falls back
// slowly; in between it holds, so it does not flap. In front of a
// bulkhead whose queue fill is a signal, this is DAGOR's admission
// control: the guard refuses just the share of P2 (then P1) that keeps
// the queue at the watermark, cheaply and with a Retry-After, while the
// queue keeps the backend's slots busy.
//
// Level and Admit are atomic loads: they never block and never allocate.
// Run measures and evaluates; without Run, call Evaluate.
type Guard struct {
	level  atomic.Int32  // the effective level (forced, or computed)
	forced atomic.Int32  // -1: not forced
	shed   atomic.Uint64 // math.Float64bits of the shed level
	// spread holds one counter per priority: a shed share s admits the
	// requests whose golden-ratio sequence value is ≥ s, so the refused
	// ones are spread evenly.
	spread [NumPriorities]atomic.Uint64

	// Fixed at construction.
	external   func() Signals
	source     func() Signals
	probeEvery time.Duration
	hold       time.Duration
	window     time.Duration
	evalEvery  time.Duration

	mu       sync.Mutex
	th       Thresholds    // guarded by mu
	computed Level         // guarded by mu; level from signals
	x        float64       // guarded by mu; the shed level
	lastEval time.Time     // guarded by mu
	reason   string        // guarded by mu
	last     Signals       // guarded by mu
	lagP50   float64       // guarded by mu
	sampler  *sampler      // guarded by mu; nil without Run
	changes  []LevelChange // guarded by mu; a ring of keepChanges
	seq      uint64        // guarded by mu; changes so far
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
		changes:    make([]LevelChange, 0, keepChanges),
	}
	g.forced.Store(-1)
	for _, o := range opts {
		o(g)
	}
	return g
}

// Level returns the current level.
func (g *Guard) Level() Level { return Level(g.level.Load()) }

// Shed returns the current shed level (see ShedShare).
func (g *Guard) Shed() float64 { return math.Float64frombits(g.shed.Load()) }

// Admit reports whether a request of priority p passes now: at a forced
// level, by the level (Level.Admits); otherwise it refuses the shed
// level's share of p (ShedShare), spread evenly over p's requests, and
// everything at black.
func (g *Guard) Admit(p Priority) bool {
	lvl := Level(g.level.Load())
	if g.forced.Load() >= 0 || !p.Valid() {
		return lvl.Admits(p)
	}
	share := ShedShare(math.Float64frombits(g.shed.Load()), p)
	switch {
	case share <= 0:
		return true
	case share >= 1:
		return false
	}
	n := g.spread[p].Add(1)
	frac := float64(n) * 0.6180339887498949
	return frac-math.Floor(frac) >= share
}

// RetryAfter is the shortest time after which the guard could admit every
// request of priority p again: the time the shed level needs to fall
// below p at its fastest (one priority per half cooldown, once every
// signal is below its release mark: the level's hysteresis). It is a
// lower bound (the level holds while a signal stays above its release
// mark) and 0 when p is admitted now. A forced level holds until it is
// unpinned, which the guard cannot foresee: the cooldown; with no
// cooldown the level follows the watermarks at once: one evaluation
// interval.
func (g *Guard) RetryAfter(p Priority) time.Duration {
	if g.forced.Load() >= 0 {
		if Level(g.level.Load()).Admits(p) {
			return 0
		}
		return g.hold
	}
	if g.hold == 0 {
		if ShedShare(math.Float64frombits(g.shed.Load()), p) <= 0 {
			return 0
		}
		return g.evalEvery
	}
	excess := math.Float64frombits(g.shed.Load()) - float64(NumPriorities-1-int(p))
	if excess <= 0 {
		return 0
	}
	return time.Duration(excess * fallShare * float64(g.hold))
}

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
// returns to the computed level. An invalid level is ignored. Forced, a
// level admits as Level.Admits says.
func (g *Guard) SetForced(l *Level) {
	g.mu.Lock()
	defer g.mu.Unlock()
	from := Level(g.level.Load())
	if l == nil {
		g.forced.Store(-1)
		g.level.Store(int32(g.computed))
		g.noteLocked(time.Now(), from, g.computed, cause{signal: "forced"})
		return
	}
	if !l.Valid() {
		return
	}
	g.forced.Store(int32(*l))
	g.level.Store(int32(*l))
	g.noteLocked(time.Now(), from, *l, cause{signal: "forced"})
}

// Evaluate samples the signals and updates the shed level and the level
// as of now. Run calls it every evaluation interval; it may also be called
// directly (tests, simulations) with synthetic times.
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
	if s.QueueFill == 0 {
		// Nothing waits for a place: upstream latency is not an excess of
		// demand the guard could shed (a mixed workload's latency spreads
		// widely at any load; the limiter follows the backend).
		s.UpstreamLatencyRatio = 0
	}
	dt := g.evalEvery.Seconds() // the first evaluation covers one interval
	if !g.lastEval.IsZero() {
		dt = math.Min(math.Max(now.Sub(g.lastEval).Seconds(), 0), 1)
	}
	g.lastEval = now
	raw, why := g.th.pressure(&s)
	before := g.computed
	hold := g.hold.Seconds()
	switch {
	case hold == 0:
		// No dynamics: the watermarks decide at once.
		g.x = [...]float64{0, 1, 2, maxShed}[raw]
	case raw >= Yellow:
		g.x += g.th.severity(&s) * dt / (riseShare * hold)
	case g.th.released(&s):
		g.x -= dt / (fallShare * hold)
	}
	// Only a signal at its black watermark sheds P0 (and only while it
	// stays there).
	top := maxShed
	if raw < Black {
		top = 2
	}
	g.x = math.Min(math.Max(g.x, 0), top)
	g.computed = levelOf(g.x)
	if raw >= Yellow {
		g.reason = why.String()
	} else if g.computed == Green {
		g.reason = ""
	}
	g.shed.Store(math.Float64bits(g.x))
	if g.computed != before {
		c := why
		if raw < Yellow {
			c = cause{} // fell: every signal below its release mark
		}
		if g.forced.Load() < 0 {
			g.noteLocked(now, before, g.computed, c)
		}
	}
	if g.forced.Load() < 0 {
		g.level.Store(int32(g.computed))
	}
	return Level(g.level.Load())
}

// noteLocked records a level change.
func (g *Guard) noteLocked(now time.Time, from, to Level, c cause) {
	if from == to {
		return
	}
	g.seq++
	ch := LevelChange{Seq: g.seq, At: now, From: from, To: to, Signal: c.signal, Value: c.value, Threshold: c.threshold, Shed: g.x}
	if len(g.changes) < keepChanges {
		g.changes = append(g.changes, ch)
		return
	}
	g.changes[int((g.seq-1)%keepChanges)] = ch
}

// LastSignals returns the last evaluated signals.
func (g *Guard) LastSignals() Signals {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// Snapshot returns the current level, the last signals, the reason and the
// latest level changes.
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
		Shed:         g.x,
		ChangeSeq:    g.seq,
	}
	for p := range st.ShedShare {
		st.ShedShare[p] = ShedShare(g.x, Priority(p))
	}
	if g.forced.Load() >= 0 {
		st.Forced, st.Reason = true, "forced"
	}
	// The ring, oldest first.
	st.Changes = make([]LevelChange, 0, len(g.changes))
	if len(g.changes) < keepChanges {
		st.Changes = append(st.Changes, g.changes...)
	} else {
		i := int(g.seq % keepChanges)
		st.Changes = append(append(st.Changes, g.changes[i:]...), g.changes[:i]...)
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
