package admit

import (
	"testing"
	"time"
)

// TestStalledAfterCut: a gap between samples longer than stallGap mean
// intervals is a stall of the gateway, and voids the probe in flight; the
// mean interval is that of the concurrency now. Right after an urgent
// probe cut the limit to a tenth of the concurrency the throughput was
// measured at, completions come ten times rarer: their ordinary gaps are
// not stalls (they voided each urgent probe after a slowdown ×3, and the
// cuts went on to a limit of 6 over 192 slots), a gap long even for the
// fewer requests still is.
func TestStalledAfterCut(t *testing.T) {
	const x, inflight = 1000.0, 200.0 // the throughput measured, at this concurrency
	cases := []struct {
		name  string
		limit int64
		gap   float64 // in mean intervals at the throughput measured, 1/x
		stall bool
	}{
		{"steady, an ordinary gap", 200, 2, false},
		{"steady, a long gap", 200, 2 * stallGap, true},
		{"cut to a tenth, an ordinary gap there", 20, 2 * stallGap, false},
		{"cut to a tenth, a long gap even there", 20, 20 * stallGap, true},
		{"limit above the concurrency measured, a long gap", 400, 2 * stallGap, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 200, Min: 1, Max: 1000}, gradientStep)
			a.x, a.last.inflight = x, inflight
			a.limit.Store(c.limit)
			a.probe = prober{phase: probeRunning, limit: int(c.limit), urgent: true}
			t0 := time.Unix(1000, 0)
			a.lastAt = t0
			a.stalled(t0.Add(time.Duration(c.gap / x * 1e9)))
			if stalled := a.probe.phase == probeIdle; stalled != c.stall {
				t.Fatalf("gap of %.0f mean intervals at limit %d: stall = %v, want %v", c.gap, c.limit, stalled, c.stall)
			}
			if c.stall && !a.urgent {
				t.Fatal("a stall voided the urgent probe but did not ask for it again")
			}
		})
	}
}
