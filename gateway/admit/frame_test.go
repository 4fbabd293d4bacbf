package admit

import (
	"math"
	"testing"
	"time"
)

// TestQueueBaseFramesRefusingBackends: a window's queue is measured from
// the baseline, except on a backend that answered 429 — while a refusal's
// ceiling holds, or in a slow start — where the last window's statistic
// is the frame when it reads above the baseline. A slowdown under the
// ceiling (the last window as slow as this one) then reads no queue;
// against the baseline it read 4 requests. A ceiling set by fast errors
// alone (a dead node's) keeps the baseline.
func TestQueueBaseFramesRefusingBackends(t *testing.T) {
	const base, slow = 0.1, 0.2
	for _, tt := range []struct {
		name      string
		ceil      float64
		slowStart bool
		refusing  bool
		last      float64 // the last window's statistic (0: no last window)
		wantQueue float64
	}{
		{"no refusal", 0, false, false, slow, 4},
		{"a slow start, no refusal", 0, true, false, slow, 4},
		{"under a ceiling", 12, false, true, slow, 0},
		{"a slow start after a refusal", 0, true, true, slow, 0},
		{"under a ceiling of fast errors, no 429", 12, false, false, slow, 4},
		{"after a refusal, the ceiling gone", 0, false, true, slow, 4},
		{"under a ceiling, no last window", 12, false, true, 0, 4},
		{"under a ceiling, the last window below the baseline", 12, false, true, 0.09, 4},
		{"under a ceiling, the last window all dropped", 12, false, true, math.Inf(1), 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 12, Min: 1, Max: 100}, gradientStep)
			a.base, a.baseVar = base, 1e-6
			a.ceil, a.slowStart, a.refusing = tt.ceil, tt.slowStart, tt.refusing
			if tt.last != 0 {
				a.last = windowStats{n: 40, stat: tt.last, se: 0.01, x: 40, inflight: 12}
			}
			s := windowStats{n: 40, stat: slow, se: 0.01, x: 40, inflight: 12}
			a.estimate(&s)
			if math.Abs(s.queue-tt.wantQueue) > 1e-9 {
				t.Fatalf("queue %.3f, want %.3f", s.queue, tt.wantQueue)
			}
		})
	}
}

// TestRefusingBackendSlowdownIsNotCut: 12 slots that answer 429 when full
// got 2× slower; the ceiling holds the limit at 12 and the last window
// already read the slower latency. The next, as slow, must not cut the
// estimate: against the baseline it reads 4 of the 12 in flight queued (a
// capacity of 8, a change), and the estimate was cut to 9 with an urgent
// probe below to tell the slowdown from a queue.
func TestRefusingBackendSlowdownIsNotCut(t *testing.T) {
	a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 13, Min: 1, Max: 100}, gradientStep)
	a.started = true
	a.base, a.baseVar = 0.1, 1e-6
	a.est, a.capEst, a.capVar, a.noise = 13, 12.5, 0.25, 0.64
	a.ceil, a.refusing = 12, true
	a.last = windowStats{n: 40, stat: 0.2, se: 0.01, x: 40, inflight: 12}
	s := windowStats{n: 40, stat: 0.2, se: 0.01, x: 40, inflight: 12}
	a.estimate(&s)
	if est := gradientStep(a, &s); est < 12 || a.urgent {
		t.Fatalf("estimate %.1f (urgent probe %v) after a window as slow as the last under the ceiling, want ≥ 12 and no probe", est, a.urgent)
	}
}

// TestOnly429MakesARefusingBackend: every drop faster than the baseline
// sets a refusal's ceiling, but only one the backend answered as full
// (Sample.Refused: 429 from every node tried) makes it a refusing backend
// whose latency's level is its speed (see adaptive.queueBase); a dead
// node's fast errors do not (in lesson 07 they held the frame while the
// survivors queued, and the limit did not settle after the kill).
func TestOnly429MakesARefusingBackend(t *testing.T) {
	for _, refused := range []bool{false, true} {
		a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 20, Min: 1, Max: 100}, gradientStep)
		a.base = 0.1
		a.OnSample(Sample{RTT: time.Millisecond, Inflight: 15, Dropped: true, Refused: refused, Ticket: 0})
		if a.ceil != 14 {
			t.Fatalf("refused %v: ceiling %.0f, want 14", refused, a.ceil)
		}
		if a.refusing != refused {
			t.Fatalf("refused %v: refusing backend %v, want %v", refused, a.refusing, refused)
		}
	}
}
