package admit

import "testing"

// TestUrgentProbeAskedAgain: a slowdown ×3 whose first urgent probe is too
// small to tell it from a queue (a handful of requests with a heavy tail)
// keeps the limit at the slots: the question is asked again before the
// windows cut further (see askAgain). Before, such a probe was pooled as
// a no-queue reading and the cuts went on: fill 0.219 and P0 0.657 in the
// first cell, fill 0.682 in the second (whose probes of 14 and 12
// requests read their spread 1.8 and 2.4 times the baseline's, where 2.4
// and 2.5 would have marked a slowdown).
func TestUrgentProbeAskedAgain(t *testing.T) {
	cells := []simCell{
		{Mean: 0.5, Sigma: 0.7, Nodes: 4, Slots: 8, Offered: 5, Initial: 0.5, Reject: true, Change: "slow", Seed: 3},
		{Mean: 0.2, Sigma: 0.5, Nodes: 3, Slots: 16, Offered: 3, Initial: 1, Change: "slow", Seed: 1},
	}
	for _, c := range cells {
		c.Gateways, c.Algo = 1, AlgoGradient
		t.Run(c.String(), func(t *testing.T) {
			r := phaseKeepsSlots(t, c, 1, "slowdown")
			if r.P0() < 0.99 {
				t.Errorf("P0 %.4f, want ≥ 0.99", r.P0())
			}
		})
	}
}

// phaseKeepsSlots plays cell c and fails t unless its phase (0 the start,
// 1 the change, 2 the return) fills ≥ 0.9 of the slots with a mean limit
// ≥ 0.8 × the slots: a limit that collapsed there reads far below both.
func phaseKeepsSlots(t *testing.T, c simCell, phase int, name string) *simResult {
	t.Helper()
	r, err := runSim(c)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Phases[phase]
	t.Logf("%s: fill %.3f, mean limit %.1f over %d slots; P0 %.4f", name, p.Fill, p.MeanLim, p.Truth, r.P0())
	if p.Fill < 0.9 || p.MeanLim < 0.8*float64(p.Truth) {
		t.Errorf("%s: fill %.3f, mean limit %.1f over %d slots; want ≥ 0.9 and ≥ 0.8 × the slots", name, p.Fill, p.MeanLim, p.Truth)
	}
	return r
}
