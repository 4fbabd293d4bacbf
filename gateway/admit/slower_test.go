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
