package admit

import "testing"

// TestFasterRebaseProbesBelow: a window that reads well below the
// baseline makes it the new baseline (the backend got faster). On a
// queueing backend whose throughput grew with the speed, that window ran
// at the limit with a little queue, so an urgent probe below measures the
// baseline again at once; not when the backend answers 429 (no queue
// there), and not when the throughput stayed (the old baseline was only
// read high, and the capacity moves with it).
func TestFasterRebaseProbesBelow(t *testing.T) {
	for _, tt := range []struct {
		name       string
		refusing   bool
		x          float64 // the faster window's throughput (the last's: 100)
		wantUrgent bool
	}{
		{"queueing, throughput grew", false, 250, true},
		{"answers 429, throughput grew", true, 250, false},
		{"queueing, throughput stayed", false, 100, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 20, Min: 1, Max: 100}, gradientStep)
			a.base, a.baseVar = 0.3, 1e-6
			a.capEst, a.est, a.refusing = 20, 21, tt.refusing
			a.last = windowStats{n: 40, stat: 0.3, se: 0.01, x: 100, inflight: 21}
			s := windowStats{n: 40, stat: 0.1, se: 0.01, x: tt.x, inflight: 21}
			a.rebase(&s)
			if a.base != 0.1 {
				t.Fatalf("baseline %.3f, want the faster window's 0.1", a.base)
			}
			if a.urgent != tt.wantUrgent {
				t.Fatalf("urgent probe %v, want %v", a.urgent, tt.wantUrgent)
			}
		})
	}
}
