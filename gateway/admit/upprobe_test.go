package admit

import "testing"

// TestDueUp: a scheduled probe above the limit runs while no queue shows,
// and while one does only after upSkipMax intervals; the shortfall's
// request runs whatever the queue; neither runs while demand leaves the
// limit unused or a refusal's ceiling rules.
func TestDueUp(t *testing.T) {
	const qse = 1.0
	cases := []struct {
		name    string
		queue   float64 // the window's queue estimate, in its standard errors
		used    bool
		sinceUp float64
		wantUp  bool
		ceil    float64
		due     bool
	}{
		{"scheduled, no queue in sight", 0.5, true, probeUpEvery, false, 0, true},
		{"scheduled, a queue below zero (noise)", -1, true, probeUpEvery, false, 0, true},
		{"scheduled, a queue in sight", 2, true, probeUpEvery, false, 0, false},
		{"a queue in sight for upSkipMax intervals", 2, true, upSkipMax * probeUpEvery, false, 0, true},
		{"not yet due", 0, true, probeUpEvery - 1, false, 0, false},
		{"asked for by the shortfall, a queue in sight", 2, true, 0, true, 0, true},
		{"demand under the limit", 0, false, probeUpEvery, true, 0, false},
		{"a ceiling after refusals", 0, true, probeUpEvery, true, 10, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 20, Min: 1, Max: 1000}, gradientStep)
			a.sinceUp, a.wantUp, a.ceil = c.sinceUp, c.wantUp, c.ceil
			s := windowStats{queue: c.queue * qse, queueSE: qse, used: c.used}
			if got := a.dueUp(&s); got != c.due {
				t.Fatalf("dueUp = %v, want %v", got, c.due)
			}
		})
	}
}

// TestProbeAboveIsBoundedInRoundTrips: past its ramp a probe above takes
// the last window's sample count, at most probeAboveRoundTrips round
// trips' (of the estimate) or minWindow, whichever is more, and at least
// minWindow/2.
func TestProbeAboveIsBoundedInRoundTrips(t *testing.T) {
	for _, tt := range []struct {
		name  string
		n     int
		est   float64
		after int // tickets past the ramp
	}{
		{"a long window: 1.5 round trips", 200, 40, 60},
		{"a shorter window: its count", 50, 40, 50},
		{"a tiny window: minWindow/2", 5, 40, minWindow / 2},
		{"a small estimate, a long window: minWindow", 200, 4, minWindow},
		{"a small estimate, a short window: its count", 20, 4, 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 40, Min: 1, Max: 1000}, gradientStep)
			a.started = true
			a.est, a.capEst, a.noise = tt.est, tt.est-1, 0.5
			a.startProbe(&windowStats{n: tt.n, target: 1, baseSE: 0.3, winSE: 0.5}, true)
			if a.probe.phase != probeRunning || !a.probe.up {
				t.Fatalf("no probe above running: %+v", a.probe)
			}
			if got := a.probe.want - a.probe.ramp; got != tt.after {
				t.Fatalf("the probe takes %d tickets past its ramp of %d, want %d", got, a.probe.ramp, tt.after)
			}
		})
	}
}
