package admit

import (
	"os"
	"testing"
)

// TestWindowAfterStartUpOvershootKeepsCapacity replays the window that
// collapsed lesson 07's --quick run (traced from the gateway): the
// start-up judged the baseline (0.406 s) and cut the limit from 288 to 89,
// then the first window of requests admitted at the start-up's 250 in
// flight read a wait of 3.36 s at a throughput of 88/s: a "queue" of 296,
// more than the concurrency, so the capacity observed was 0 and the limit
// fell to its minimum, where a window takes eight round trips of one
// request. Requests completing at 88/s, each holding a slot at least about
// the baseline, keep at least 88 × 0.406 ≈ 36 slots busy: the queue
// estimate cannot exceed inflight − 36, and a window that hits that bound
// is censored (it measured the start-up's queue, which the limit already
// left): the limit stays.
func TestWindowAfterStartUpOvershootKeepsCapacity(t *testing.T) {
	g := newGradient(LimiterConfig{Algorithm: AlgoGradient, Limit: 288, Min: 2, Max: 512})
	a := g.adaptive
	a.mu.Lock()
	defer a.mu.Unlock()
	a.started = true
	a.base, a.baseVar = 0.4057, 0.0042*0.0042
	a.capEst, a.capVar = 84, 9
	a.est = 89
	a.noise = 4
	s := windowStats{n: 35, inflight: 250.1, stat: 3.7704, se: 0.0783, x: 88.2, used: true, cohorts: 2}
	a.estimate(&s)
	floor := s.x * a.base
	if s.queue > s.inflight-floor+1e-9 {
		t.Errorf("queue estimate %.1f > in flight %.1f − busy slots %.1f", s.queue, s.inflight, floor)
	}
	if !s.censored {
		t.Errorf("the window was not censored: queue %.1f", s.queue)
	}
	est := gradientStep(a, &s)
	if est < floor {
		t.Errorf("limit after the window %.1f, want ≥ %.1f (x × base: the slots its throughput keeps busy); capacity estimate %.1f", est, floor, a.capEst)
	}
}

// TestLossDuringStartUpSettles is lesson 07's --quick shape in the
// simulation: LLM-like service (mean 1 s, lognormal σ 0.6 and 0.9), 3 × 24
// slots, the limit starting at 4× the truth, one node lost 6 mean service
// times into the start-up, while the start-up's queues are still draining.
// The limit must settle on the survivors' slots within issue 9's bound,
// max(3 s, 15 mean service times). It does not yet in 5 of these 12 cells
// (settles of 17–40 mean service times; 6 of 12 at 27–35 or never before
// the probes above the limit came every few round trips): after the loss
// the limit lands below the survivors' capacity and climbs back slowly. The collapse
// to the minimum that lesson 07 showed is fixed and tested by
// TestWindowAfterStartUpOvershootKeepsCapacity; this slower settle is not.
// LEVEE_SIM_KNOWN=1 runs it.
func TestLossDuringStartUpSettles(t *testing.T) {
	if os.Getenv("LEVEE_SIM_KNOWN") == "" {
		t.Skip("known shortfall, not fixed: after a node lost inside the start-up 5 of 12 cells settle in 17–40 mean service times (bound 15; 6 of 12 at 27–35 or never before the second limiter pass); LEVEE_SIM_KNOWN=1 runs it")
	}
	for _, sg := range []float64{0.6, 0.9} {
		for _, off := range []float64{3, 10} {
			for seed := uint64(1); seed <= 3; seed++ {
				c := simCell{Mean: 1, Sigma: sg, Nodes: 3, Slots: 24, Offered: off, Initial: 4, Gateways: 1,
					Change: "loss", ChangeAt: 6, Seed: seed, Algo: AlgoGradient}
				r, err := runSim(c)
				if err != nil {
					t.Fatal(err)
				}
				p := r.Phases[1]
				if allow := max(accSettleS/p.Mean, float64(accSettleMST)); p.Settle > allow {
					t.Errorf("%s seed %d: settled on %d slots after %.1f mean service times, want ≤ %.0f", c, seed, p.Truth, p.Settle, allow)
				}
			}
		}
	}
}
