package admit

import (
	"fmt"
	"strings"
	"testing"
)

// TestGuardShedsOnlyExcess is issue 9's guard acceptance in the
// simulation, with no fault: offered ≤ 0.9 × capacity → nothing shed (by
// the guard or the bulkhead); offered ≥ capacity → goodput ≥ 0.95 of the
// capacity. The guard is judged over the static limit at the true
// capacity (so what it sheds is its own doing): there goodput ≥ 0.95 of
// the capacity; and over the adaptive limit (what the default lab runs),
// where the limit's own shortfalls (see TestLimiterMatrix) show too: there
// goodput ≥ 0.95 of the capacity as well, and the guard must keep ≥ 0.97
// of the goodput the same limiter reaches without it, pooled over
// guardSeeds seeds (one seed's ratio spreads ±3 %: with and without the
// guard the runs part ways at the first shed and the limiter's probes fall
// differently; pooled, 0.974–1.003 here, 0.978–1.000 before issue 9's
// second pass). For a lab-like workload, a
// slow heavy-tailed one and streams, at several loads.
func TestGuardShedsOnlyExcess(t *testing.T) {
	type load struct {
		offered float64
		algo    string
	}
	var loads []load
	for _, algo := range []string{AlgoStatic, AlgoGradient} {
		for _, off := range []float64{0.5, 0.9, 1.2, 3} {
			loads = append(loads, load{off, algo})
		}
	}
	work := []simCell{
		{Mean: 0.2, Sigma: 0.5, Slots: 16},
		{Mean: 1, Sigma: 0.9, Slots: 24},
		{Mean: 1, Sigma: 0.5, Slots: 16, Stream: true},
	}
	for _, w := range work {
		for _, l := range loads {
			c := w
			c.Nodes, c.Gateways, c.Initial, c.Seed, c.Guard = 3, 1, 1, 3, true
			c.Offered, c.Algo = l.offered, l.algo
			t.Run(fmt.Sprintf("%s/%s", l.algo, c), func(t *testing.T) {
				res, err := runSim(c)
				if err != nil {
					t.Fatal(err)
				}
				shed := 0
				for o, n := range res.Outcomes {
					if strings.HasPrefix(o, "shed_") {
						shed += n
					}
				}
				p := res.Phases[0]
				t.Logf("fill %.3f settle %.1f shed %d outcomes %v", p.Fill, p.Settle, shed, res.Outcomes)
				if c.Offered <= 0.9 && shed > 0 {
					t.Errorf("offered %.1f× capacity: %d requests shed (%v), want none", c.Offered, shed, res.Outcomes)
				}
				switch {
				case c.Offered < 1:
				case c.Algo == AlgoStatic && p.Fill < 0.95:
					t.Errorf("offered %.1f× capacity: goodput %.3f of capacity, want ≥ 0.95", c.Offered, p.Fill)
				case c.Algo != AlgoStatic:
					var cells []simCell
					for seed := uint64(1); seed <= guardSeeds; seed++ {
						g := c
						g.Seed = seed
						bare := g
						bare.Guard = false
						cells = append(cells, g, bare)
					}
					rs, err := runSims(cells, 2)
					if err != nil {
						t.Fatal(err)
					}
					with, without := 0, 0
					fill, lo := 0.0, 1.0
					for i := 0; i < len(rs); i += 2 {
						with += rs[i].Goodput
						without += rs[i+1].Goodput
						fill += rs[i].Phases[0].Fill
						lo = min(lo, rs[i].Phases[0].Fill)
					}
					// Pooled as well: one seed's fill is a coin flip where
					// the limiter's mean sits near 0.95 (the slow heavy-tailed
					// workload: 0.905–0.969 over seeds 1–10 at issue 9's
					// eleventh pass, 5 of them under 0.95).
					if fill /= guardSeeds; fill < 0.95 {
						t.Errorf("offered %.1f× capacity: goodput %.3f of capacity with the adaptive limit (mean over %d seeds, lowest %.3f), want ≥ 0.95", c.Offered, fill, guardSeeds, lo)
					} else {
						t.Logf("goodput %.3f of capacity with the adaptive limit (mean over %d seeds, lowest %.3f)", fill, guardSeeds, lo)
					}
					if ratio := float64(with) / float64(without); ratio < 0.97 {
						t.Errorf("offered %.1f× capacity: goodput %.3f of the same limiter's without the guard over %d seeds, want ≥ 0.97", c.Offered, ratio, guardSeeds)
					} else {
						t.Logf("goodput %.3f of the same limiter's without the guard over %d seeds", ratio, guardSeeds)
					}
				}
			})
		}
	}
}

// guardSeeds: the seeds TestGuardShedsOnlyExcess pools the adaptive
// limit's goodput over. Ten hid a collapse: the slow heavy-tailed cell at
// 3× read 0.953 over seeds 1–10 on issue 9's thirty-third pass's code and
// 0.939 over seeds 1–20, its seed 20 at 0.726 (the start-up's jump
// overshot, and its windows read a capacity of 42 over 72 slots; the
// limit sat near 45 for 45 service times). The thirty-fourth pass's jump
// check reads 0.949 and 0.951.
const guardSeeds = 20

// runSims plays cells on workers goroutines, in order.
func runSims(cells []simCell, workers int) ([]*simResult, error) {
	out := make([]*simResult, len(cells))
	err := inParallel(len(cells), workers, func(i int) (err error) {
		out[i], err = runSim(cells[i])
		return err
	})
	return out, err
}
