package admit

import (
	"fmt"
	"math"
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
	lvl, c := t.pressure(s)
	if lvl == Green {
		return Green, ""
	}
	return lvl, c.String()
}

// cause is the signal behind a level: its name, value and the watermark
// it was compared with.
type cause struct {
	signal    string
	value     float64
	threshold float64
	level     Level
}

func (c cause) String() string {
	if c.signal == "" {
		return ""
	}
	return fmt.Sprintf("%s %.4g ≥ %.4g (%s)", c.signal, c.value, c.threshold, c.level)
}

// pressure returns the highest level whose watermarks s reaches and the
// signal that reaches it furthest (by its excess over the watermark, in
// the watermark's own scale); at green, the signal closest to its yellow
// watermark (value/threshold).
func (t *Thresholds) pressure(s *Signals) (Level, cause) {
	v := s.values()
	levels := [...]*Signals{&t.Yellow, &t.Red, &t.Black}
	for lvl := Black; lvl >= Yellow; lvl-- {
		th := levels[lvl-1].values()
		best, bestX := -1, 0.0
		for i, x := range th {
			if x > 0 && v[i] >= x && (best < 0 || v[i]/x > bestX) {
				best, bestX = i, v[i]/x
			}
		}
		if best >= 0 {
			return lvl, cause{signalNames[best], v[best], th[best], lvl}
		}
	}
	return Green, cause{}
}

// severity is how far the worst signal at yellow or above is past its
// yellow watermark, in (0, 1]: (value − yellow)/(red − yellow) where red
// is set, (value − yellow)/yellow otherwise; at least minSeverity.
func (t *Thresholds) severity(s *Signals) float64 {
	v := s.values()
	y, r := t.Yellow.values(), t.Red.values()
	sev := 0.0
	for i := range v {
		if y[i] <= 0 || v[i] < y[i] {
			continue
		}
		span := y[i]
		if r[i] > y[i] {
			span = r[i] - y[i]
		}
		sev = math.Max(sev, (v[i]-y[i])/span)
	}
	return math.Min(math.Max(sev, minSeverity), 1)
}

// released reports whether every signal is below releaseShare of its
// yellow watermark (the hysteresis: between that and the watermark the
// shed level holds).
func (t *Thresholds) released(s *Signals) bool {
	v, y := s.values(), t.Yellow.values()
	for i := range v {
		if y[i] > 0 && v[i] >= releaseShare*y[i] {
			return false
		}
	}
	return true
}

// The shed level's dynamics (dimensionless, or in units of the guard's
// cooldown).
const (
	// riseShare: at full severity the shed level rises by one priority in
	// riseShare × the cooldown (a brief spike of a signal sheds little).
	riseShare = 1.0
	// minSeverity: the slowest rise, as a share of the full one.
	minSeverity = 0.1
	// releaseShare: the shed level falls only while every signal is below
	// this share of its yellow watermark, by one priority per fallShare ×
	// the cooldown.
	releaseShare = 0.8
	fallShare    = 0.5
	// maxShed: every priority shed; past 2 (every P2 and P1) only while
	// a signal is at its black watermark.
	maxShed = 3.0
	// keepChanges: level changes the guard remembers.
	keepChanges = 64
)

// ShedShare returns the share of requests of priority p that shed level x
// refuses: x ∈ [0, 1] sheds that share of P2, x ∈ (1, 2] every P2 and
// x − 1 of P1, x ∈ (2, 3] every P2 and P1 and x − 2 of P0.
func ShedShare(x float64, p Priority) float64 {
	return math.Min(math.Max(x-float64(NumPriorities-1-int(p)), 0), 1)
}

// levelOf is the level that shed level x shows.
func levelOf(x float64) Level {
	switch {
	case x > 2:
		return Black
	case x > 1:
		return Red
	case x > 0:
		return Yellow
	}
	return Green
}
