package admit

import "testing"

// TestTracedLimitEstimate: with LEVEE_MATRIX_TRACE=estimate the
// simulation traces the limit a limiter rests at outside probes — its
// estimate, under a refusal's ceiling — so that a probe's excursion does
// not enter the settle and the CV; otherwise the limit itself, probe and
// all.
func TestTracedLimitEstimate(t *testing.T) {
	for _, tt := range []struct {
		name     string
		estimate bool
		up       bool
		ceil     float64
		want     int // 0: the limit itself
	}{
		{"limit, probing above", false, true, 0, 0},
		{"limit, probing below", false, false, 0, 0},
		{"estimate, probing above", true, true, 0, 13},
		{"estimate, probing below", true, false, 0, 13},
		{"estimate under a refusal's ceiling", true, false, 11.6, 12},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func(v bool) { traceEstimate = v }(traceEstimate)
			traceEstimate = tt.estimate
			g := newGradient(LimiterConfig{Algorithm: AlgoGradient, Limit: 12, Min: 1, Max: 100})
			a := g.adaptive
			a.started = true
			a.est, a.capEst, a.noise, a.ceil = 13.4, 12.4, 0.8, tt.ceil
			a.startProbe(&windowStats{n: 32, target: 1, winSE: 0.9}, tt.up)
			lim := g.Limit()
			if a.probe.phase != probeRunning || tt.up && lim <= 13 || !tt.up && lim >= 12 {
				t.Fatalf("probe phase %d at limit %d, want a probe running %s the estimate", a.probe.phase, lim, map[bool]string{true: "above", false: "below"}[tt.up])
			}
			want := tt.want
			if want == 0 {
				want = lim
			}
			if got := tracedLimit(g); got != want {
				t.Fatalf("traced %d, want %d (limit %d)", got, want, lim)
			}
		})
	}
}
