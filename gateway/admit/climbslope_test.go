package admit

import (
	"math"
	"testing"
)

// TestRoomSinceLast: a climb's window shows room when the queue grew by
// less than half the requests its step added (a standard error below that
// line), whatever the queue read against the baseline; not when the step
// is within the noise, the queue grew with it, the queue is well above
// the target, or there is no window before it.
func TestRoomSinceLast(t *testing.T) {
	const se = 1.0 // each window's own standard error, requests
	last := windowStats{n: 40, inflight: 40, queue: 3, winSE: se, queueSE: 2 * se, target: 3}
	cases := []struct {
		name     string
		last     windowStats
		inflight float64
		queue    float64
		room     bool
	}{
		{"a queue read against a low baseline, not growing with the step", last, 50, 3.5, true},
		{"no queue before, none after", windowStats{n: 40, inflight: 40, winSE: se, queueSE: se}, 50, 0, true},
		{"the queue grew with the step", last, 50, 3 + 8, false},
		{"growth within a standard error of half the step", last, 50, 3 + 5 - 0.5, false},
		{"a step within the noise", last, 42, 3, false},
		{"a queue well above the target (3 + 2 × 2), not growing", windowStats{n: 40, inflight: 40, queue: 7, winSE: se, queueSE: 2 * se}, 50, 7.5, false},
		{"no window before", windowStats{}, 50, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 40, Min: 1, Max: 1000}, gradientStep)
			a.last = c.last
			s := windowStats{n: 40, inflight: c.inflight, queue: c.queue, winSE: se, queueSE: 2 * se, target: 3}
			if got := a.roomSinceLast(&s); got != c.room {
				t.Fatalf("roomSinceLast = %v, want %v (congested %v)", got, c.room, s.congested())
			}
		})
	}
}

// TestFixSEWithoutSpread: a window of a request or two has no spread of
// its own; its standard error is the pooled spread's, never 0 (a probe of
// two requests once set the baseline with a variance of 0, and no later
// probe could move it).
func TestFixSEWithoutSpread(t *testing.T) {
	a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 40, Min: 1, Max: 1000}, gradientStep)
	wide := windowStats{n: maxCohort / 4, sw: 0.05, div: 4, se: 0.05 / 4}
	a.fixSE(&wide)
	xs := []float64{0.1, 0.12}
	mean, sw, div, _, _ := trimmedMean(xs, 0, 0.5)
	if sw != 0 {
		t.Fatalf("two samples' winsorized deviation = %v, want 0 (the case under test)", sw)
	}
	s := windowStats{n: 2, stat: mean, sw: sw, div: div}
	a.fixSE(&s)
	if want := a.swEst / div; s.se <= 0 || math.Abs(s.se-want) > 1e-12 {
		t.Fatalf("se = %v, want the pooled spread's %v", s.se, want)
	}
	if a.swEst != 0.05 {
		t.Fatalf("pooled spread = %v after a window without spread, want it unchanged (0.05)", a.swEst)
	}
}
