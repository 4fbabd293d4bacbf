package admit

import "testing"

// TestFillMeasuresTheOracle checks the matrix's fill measure on the issue's
// own oracle: a static priority semaphore set to the true capacity keeps
// every live slot busy under overload, so its fill must read between 0.95
// and 1 in every phase, on small backends as on large ones, through a
// node's loss and a slowdown ×3 and back (behind nodes that queue or that
// answer 429). The count of ok requests ÷ (slots ÷ mean) the matrix used
// before read 0.80–1.06 on 3 × 4 slots (the service times' draws, and
// short requests surviving the deadline where long ones do not); the
// slot-time with a request begun before the span counted whole read up
// to 1.03; and the slot-time taken as a request's service time at the
// speed when it finished rather than when it began (a request that
// straddles a change of speed keeps the speed it began with) read up to
// 1.08 before a slowdown and down to 0.946 after its return.
func TestFillMeasuresTheOracle(t *testing.T) {
	var cells []simCell
	for _, sg := range matrixSigmas {
		for _, sl := range []int{4, 64} {
			for _, off := range matrixOffered {
				for _, k := range []struct {
					change string
					reject bool
				}{{"loss", false}, {"slow", false}, {"slow", true}} {
					cells = append(cells, simCell{Mean: 0.2, Sigma: sg, Nodes: 3, Slots: sl, Offered: off, Initial: 1,
						Gateways: 1, Change: k.change, Reject: k.reject, Seed: 1, Algo: AlgoStatic})
				}
			}
		}
	}
	for _, c := range cells {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			res, err := runSim(c)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Phases) != 3 {
				t.Fatalf("%d phases, want 3 (start, change, return)", len(res.Phases))
			}
			for i, p := range res.Phases {
				if p.Fill < accFill || p.Fill > 1+1e-9 {
					t.Errorf("phase %d (%d slots): static fill %.3f, want %.2f–1", i, p.Truth, p.Fill, accFill)
				}
			}
		})
	}
}
