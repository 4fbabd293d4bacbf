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
