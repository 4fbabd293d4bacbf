package admit

import (
	"math"
	"testing"
)

// TestSlowStartPoolsItsWindows: a start far below the capacity (a
// sixteenth of 3×64 slots, 200 ms, σ 0.5) climbs through several windows
// with no queue; once a step shows a window ran below the capacity, its
// samples join the baseline. The start-up's baseline alone is 12
// requests' (the initial limit's quarters), a few standard errors off as
// often as not; when the slow start ends, the baseline the limit then
// measures the capacity against is within a few per cent of the no-queue
// statistic (the fastest half's mean, mean × Φ(−σ) / ½ for a lognormal).
func TestSlowStartPoolsItsWindows(t *testing.T) {
	const seeds = 8
	c := simCell{Mean: 0.2, Sigma: 0.5, Nodes: 3, Slots: 64, Offered: 3, Initial: 1.0 / 16, Gateways: 1, Algo: AlgoGradient}
	truth := c.Mean * normCDF(-c.Sigma) / 0.5
	var errSum float64
	for seed := range uint64(seeds) {
		c.Seed = seed + 1
		at, base := -1.0, 0.0
		wasSlow := false
		debugTick = func(s *sim) {
			if s.cell.Algo == AlgoStatic || at >= 0 {
				return
			}
			a := adaptiveOf(s.gws[0].bh.Limiter())
			a.mu.Lock()
			slow, b := a.slowStart, a.base
			a.mu.Unlock()
			if wasSlow && !slow {
				at, base = s.now/c.Mean, b
			}
			wasSlow = wasSlow || slow
		}
		if _, err := runSim(c); err != nil {
			debugTick = nil
			t.Fatal(err)
		}
		debugTick = nil
		if at < 0 {
			t.Fatalf("seed %d: the slow start never ended", c.Seed)
		}
		rel := math.Abs(base-truth) / truth
		t.Logf("seed %d: the slow start ended at %.1f service times, baseline %.4f s (no queue: %.4f s, %.1f %% off)", c.Seed, at, base, truth, 100*rel)
		errSum += rel
	}
	if mean := errSum / seeds; mean > 0.04 {
		t.Errorf("the baseline when the slow start ended was %.1f %% off the no-queue statistic on average over %d seeds, want ≤ 4 %%", 100*mean, seeds)
	}
}

// normCDF is the standard normal distribution function.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// TestSlowStartJudgesTheStep: the cohorts admitted before a slow start's
// step measure the concurrency before it; the window after the step takes
// the cohorts after it alone. Pooled with the earlier ones, that window
// ran mostly below the step's limit, and the slow start held (see
// gradientStep) and waited for another window (traced: 200 ms, σ 0.5, a
// start at a quarter of 3×64 slots: 1.4 service times from one step to
// the next). From a sixteenth of 3×64 slots, over 8 seeds, 6 of 45
// windows of the slow start are held so (29 of 67 before): those whose
// requests were admitted as the concurrency rose to the step's limit,
// one more at each completion.
func TestSlowStartJudgesTheStep(t *testing.T) {
	const seeds = 8
	c := simCell{Mean: 0.2, Sigma: 0.5, Nodes: 3, Slots: 64, Offered: 3, Initial: 1.0 / 16, Gateways: 1, Algo: AlgoGradient}
	held, windows := 0, 0
	debugWindow = func(a *adaptive, s *windowStats, before float64) {
		if !a.slowStart {
			return
		}
		windows++
		if !a.climbWait {
			held++ // the step's window came before the step's requests (see gradientStep)
		}
	}
	defer func() { debugWindow = nil }()
	for seed := range uint64(seeds) {
		c.Seed = seed + 1
		if _, err := runSim(c); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d windows in the slow start, %d held for the next", windows, held)
	if windows == 0 {
		t.Fatal("no window of the slow start seen")
	}
	if 4*held > windows {
		t.Errorf("%d of %d windows of the slow start were admitted mostly below the step they judge, want at most a quarter", held, windows)
	}
}
