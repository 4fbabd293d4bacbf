package admit

import (
	"runtime"
	"testing"
)

// Held-out workloads: cells on none of the matrix's axis values — two and
// four nodes instead of three, 8 and 32 slots per node, a lognormal σ of
// 0.7, 2× and 5× offered, initial limits at half and twice the truth, a
// 0.5 s mean — judged by the same acceptance (see matrix_test.go). No
// constant of the limiter was chosen on them: they measure how far the
// matrix's figures carry to backends it does not describe, as an operator
// would first ask. BenchmarkLimiterMatrix runs them with
// LEVEE_MATRIX=heldout; TestHeldOutFloors checks a few in CI against the
// floors only (a collapse), as TestLimiterMatrix checks its cells.
var (
	heldOutNodes    = []int{2, 4}
	heldOutSlots    = []int{8, 32}
	heldOutOffered  = []float64{2, 5}
	heldOutInitials = []float64{0.5, 2}
	heldOutGateways = []int{1, 2}
)

const (
	heldOutMean  = 0.5
	heldOutSigma = 0.7
)

// heldOutCells returns every held-out cell on one seed: each change
// (a node lost, service ×3, slots cut to a quarter; each and back) on
// queueing nodes and on nodes that answer 429, behind one gateway and two.
func heldOutCells(seed uint64) []simCell {
	var cells []simCell
	for _, ch := range []string{"loss", "slow", "slots"} {
		for _, rej := range []bool{false, true} {
			for _, gw := range heldOutGateways {
				for _, n := range heldOutNodes {
					for _, sl := range heldOutSlots {
						for _, off := range heldOutOffered {
							for _, in := range heldOutInitials {
								cells = append(cells, simCell{Mean: heldOutMean, Sigma: heldOutSigma, Nodes: n, Slots: sl,
									Offered: off, Initial: in, Gateways: gw, Reject: rej, Change: ch, Seed: seed, Algo: AlgoGradient})
							}
						}
					}
				}
			}
		}
	}
	return cells
}

// heldOutCICells: one held-out cell per change and node count, on the CI's
// seed.
func heldOutCICells() []simCell {
	var cells []simCell
	for i, ch := range []string{"loss", "slow", "slots"} {
		for j, n := range heldOutNodes {
			cells = append(cells, simCell{Mean: heldOutMean, Sigma: heldOutSigma, Nodes: n, Slots: heldOutSlots[(i+j)%2],
				Offered: heldOutOffered[j], Initial: heldOutInitials[i%2], Gateways: 1, Reject: i == 1 && j == 1, Change: ch,
				Seed: 7, Algo: AlgoGradient})
		}
	}
	return cells
}

// TestHeldOutFloors runs a held-out cell per change and node count and
// fails on a collapse: a phase's fill, the goodput beside the static
// semaphore's, or P0 (where judged) under the floors TestLimiterMatrix
// holds its cells to. The full acceptance is reported, not judged: these
// cells are not what the limiter is built and accepted on (see
// BenchmarkLimiterMatrix, LEVEE_MATRIX=heldout, for where they stand).
func TestHeldOutFloors(t *testing.T) {
	cells := heldOutCICells()
	results, err := runCells(cells, min(2, runtime.GOMAXPROCS(0)))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		t.Logf("%-70s settle %5.1f fill %.3f cv %.3f P0 %.4f vs static %.3f; acceptance: %v", cells[i], r.settle, r.fill, r.cv, r.res.P0(), r.vsStatic, r.failures)
		if r.fill < floorFill || r.vsStatic < floorVsStatic || (r.p0Judged && r.res.P0() < floorP0) {
			t.Errorf("%s: below the floors: fill %.3f (≥ %.2f), vs static %.3f (≥ %.2f), P0 %.4f (≥ %.2f)", cells[i], r.fill, floorFill, r.vsStatic, floorVsStatic, r.res.P0(), floorP0)
		}
	}
}
