package admit

import "testing"

// TestSlowerTellsSlowdownFromQueue checks the verdict of an urgent probe
// (see endProbe): below the capacity the cut assumed, a slower backend
// still reads slow, with every request lengthened by the same factor (its
// spread scales), while a queue is gone there, or, left by other
// gateways, shifts the latency without spreading it.
func TestSlowerTellsSlowdownFromQueue(t *testing.T) {
	const base, baseSW = 0.100, 0.030
	cases := []struct {
		name   string
		last   windowStats // the window that cut
		probe  windowStats
		slower bool
	}{
		{"3× slower", windowStats{n: 64, stat: 0.30, sw: 0.09}, windowStats{n: 40, stat: 0.29, sw: 0.085}, true},
		{"3× slower, a small probe", windowStats{n: 64, stat: 0.30, sw: 0.09}, windowStats{n: 4, stat: 0.29, sw: 0.02}, true},
		{"slots cut: the probe finds no queue", windowStats{n: 64, stat: 0.30, sw: 0.035}, windowStats{n: 40, stat: 0.101, sw: 0.03}, false},
		{"a queue left by other gateways", windowStats{n: 64, stat: 0.30, sw: 0.035}, windowStats{n: 40, stat: 0.25, sw: 0.036}, false},
		{"a queue the window shows, a spread the probe lacks", windowStats{n: 64, stat: 0.30, sw: 0.09}, windowStats{n: 40, stat: 0.25, sw: 0.033}, false},
	}
	for _, c := range cases {
		a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 48, Min: 1, Max: 512}, gradientStep)
		a.base, a.baseVar, a.baseSW = base, 0.004*0.004, baseSW
		a.last = c.last
		z := 0.01
		if got := a.slower(&c.probe, z); got != c.slower {
			t.Errorf("%s: slower = %v, want %v", c.name, got, c.slower)
		}
	}
}

// TestSuspectAbove checks which probes that read above the baseline are
// held in doubt (see endProbe): every one until probeRejects in a row have,
// except the first after the start-up when its spread grew with its level
// (a slower backend than the start-up measured); that one is held in doubt
// too when its spread stayed, as a queue leaves it (lesson 07: a probe
// begun as a node died).
func TestSuspectAbove(t *testing.T) {
	const base, baseSW = 0.45, 0.20
	queued := windowStats{n: 42, stat: 0.79, sw: 0.20} // +0.34 s, the spread unchanged
	slowed := windowStats{n: 42, stat: 0.79, sw: 0.36} // ×1.76, the spread with it
	unknown := windowStats{n: 42, stat: 0.79, sw: 0}   // no spread measured
	cases := []struct {
		name    string
		pooled  int // probes in the baseline's pool (1: only the start-up)
		suspect int // probes above it in a row so far
		probe   windowStats
		want    bool
	}{
		{"first probe, a queue", 1, 0, queued, true},
		{"first probe, slower", 1, 0, slowed, false},
		{"first probe, no spread", 1, 0, unknown, false},
		{"later probe, a queue", 3, 0, queued, true},
		{"later probe, slower", 3, 0, slowed, true},
		{"first probe, a queue, repeated", 1, probeRejects, queued, false},
		{"later probe, repeated", 3, probeRejects, slowed, false},
	}
	for _, c := range cases {
		a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 48, Min: 1, Max: 512}, gradientStep)
		a.base, a.baseSW = base, baseSW
		a.pool.count, a.suspect = c.pooled, c.suspect
		if got := a.suspectAbove(&c.probe); got != c.want {
			t.Errorf("%s: suspectAbove = %v, want %v", c.name, got, c.want)
		}
	}
}
