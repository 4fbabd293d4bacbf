package admit

import (
	"math/rand/v2"
	"testing"
)

// TestProbesAtTheBaselineBackOff: scheduled probes below that read the
// baseline's own distribution (no queue, the backend unchanged) confirm
// it, and the interval between probes doubles (up to probeMaxEvery). A
// reset at one standard error off the baseline reset it after 21–25 % of
// them by chance alone and kept the probes coming every few round trips,
// each costing the calls it keeps out.
func TestProbesAtTheBaselineBackOff(t *testing.T) {
	const probes, plain = 300, 0.6
	for _, n := range []int{8, 24, 64} {
		a := kindsStartUp(t, 64, 0, plain, 1)
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		resets := 0
		for i := range probes {
			a.every = 2 * probeMinEvery
			a.probe = prober{}
			co := plainCohort(uint64(1000+i*n), n, plain, rng)
			co.off = a.kindOff
			a.endProbe(co)
			if a.every < 2*probeMinEvery {
				resets++
			}
		}
		share := float64(resets) / probes
		t.Logf("probes of %d calls at the baseline: %.0f %% reset the schedule", n, 100*share)
		if share > 0.15 {
			t.Errorf("probes of %d calls at the baseline: %d of %d reset the schedule (%.0f %%), want ≤ 15 %%", n, resets, probes, 100*share)
		}
	}
}
