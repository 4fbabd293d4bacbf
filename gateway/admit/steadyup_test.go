package admit

import (
	"math"
	"testing"
)

// TestSteadyProbesAboveOnSmallBackends: on 3×4 queueing slots (a node
// lost and back, which the limiter is told of) the limit's CV and its
// settle are the probes' above the limit: each is 3–5 requests on a limit
// of 13 for 2–3 service times. With the quick schedule only after a fall
// the windows measured, the limit stays steady: over these cells the
// worst phase's CV averages within the matrix's 10 % and half of them
// settle within the allowance. Every 8 cohorts (the schedule before the
// thirty-sixth pass) the CV averaged 0.129 and none settled.
func TestSteadyProbesAboveOnSmallBackends(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	var cvSum float64
	settled, n := 0, 0
	for _, sigma := range []float64{0.25, 0.5} {
		for _, seed := range []uint64{1, 2, 3} {
			c := simCell{Mean: 0.2, Sigma: sigma, Nodes: 3, Slots: 4, Offered: 3, Initial: 1, Gateways: 1, Change: "loss", Seed: seed, Algo: AlgoGradient}
			r, err := evalCell(c)
			if err != nil {
				t.Fatal(err)
			}
			n++
			cvSum += r.cv
			if r.okSettle {
				settled++
			}
			t.Logf("%v: worst phase's CV %.3f, settle %.1f service times (allowance %.0f), fill %.3f, × static %.3f", c, r.cv, r.settle, r.settleLimit, r.fill, r.vsStatic)
			if r.vsStatic < accVsStatic {
				t.Errorf("%v: goodput %.3f × the static semaphore's, want ≥ %.2f", c, r.vsStatic, accVsStatic)
			}
		}
	}
	if cv := cvSum / float64(n); cv > accCV {
		t.Errorf("the worst phase's limit CV averages %.3f over %d cells, want ≤ %.2f", cv, n, accCV)
	}
	if settled*2 < n {
		t.Errorf("%d of %d cells settle within the allowance, want at least half", settled, n)
	}
}

// TestProbesAboveLookForLostCapacity: slots cut to a quarter and back,
// untold. The fall the windows measured keeps the quick schedule of
// probes above until the estimate is back, so the return is found. On
// the steady schedule alone the worst seed's return filled 0.265 of the
// slots; on the quick schedule throughout (before the thirty-sixth
// pass) seed 1's filled 0.841: its probes above had moved the baseline.
func TestProbesAboveLookForLostCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	worst := math.Inf(1)
	for _, seed := range []uint64{1, 2, 3} {
		c := simCell{Mean: 0.2, Sigma: 0.25, Nodes: 3, Slots: 16, Offered: 3, Initial: 1, Gateways: 1, Change: "slots",
			Mix: [NumPriorities]float64{0.20, 0.30, 0.50}, Seed: seed, Algo: AlgoGradient}
		r, err := evalCell(c)
		if err != nil {
			t.Fatal(err)
		}
		ret := r.res.Phases[2]
		t.Logf("%v: the return's fill %.3f, settle %.1f service times; × static %.3f", c, ret.Fill, ret.Settle, r.vsStatic)
		worst = math.Min(worst, ret.Fill)
	}
	if worst < 0.9 {
		t.Errorf("the return's fill %.3f on the worst seed, want ≥ 0.9", worst)
	}
}
