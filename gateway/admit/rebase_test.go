package admit

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFasterRebaseProbesBelow: a window that reads well below the
// baseline makes it the new baseline (the backend got faster). On a
// queueing backend whose throughput grew with the speed, that window ran
// at the limit with a little queue, so an urgent probe below measures the
// baseline again at once; not when the backend answers 429 (no queue
// there), and not when the throughput stayed (the old baseline was only
// read high, and the capacity moves with it). Either way the capacity
// stays at least what that window ran with no queue.
func TestFasterRebaseProbesBelow(t *testing.T) {
	for _, tt := range []struct {
		name       string
		refusing   bool
		x          float64 // the faster window's throughput (the last's: 100)
		inflight   float64 // the faster window's mean in flight
		wantUrgent bool
		wantCap    float64 // the capacity estimate after
	}{
		{"queueing, throughput grew", false, 250, 21, true, 20},
		{"answers 429, throughput grew", true, 250, 21, false, 20},
		{"queueing, throughput stayed", false, 100, 10, false, 10}, // 20 shifted by (0.1−0.3)×100 to 0: the window's 10 in flight
		{"queueing, throughput stayed, little in flight", false, 100, 1, false, 1},
		// The traced collapse (see rebase): the throughput grew, but less
		// than the latency fell (the last window had held part of the
		// speed-up), so the shift took the capacity to its minimum.
		{"answers 429, throughput grew less than the latency fell", true, 170, 16, false, 16},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 20, Min: 1, Max: 100}, gradientStep)
			a.base, a.baseVar = 0.3, 1e-6
			a.capEst, a.est, a.refusing = 20, 21, tt.refusing
			a.last = windowStats{n: 40, stat: 0.3, se: 0.01, x: 100, inflight: 21}
			a.x = tt.x // the throughput's EWMA, as closeWindow's s.x
			s := windowStats{n: 40, stat: 0.1, se: 0.01, x: tt.x, inflight: tt.inflight}
			a.rebase(&s)
			if a.base != 0.1 {
				t.Fatalf("baseline %.3f, want the faster window's 0.1", a.base)
			}
			if a.urgent != tt.wantUrgent {
				t.Fatalf("urgent probe %v, want %v", a.urgent, tt.wantUrgent)
			}
			if math.Abs(a.capEst-tt.wantCap) > 1e-9 {
				t.Fatalf("capacity %.2f, want %.2f", a.capEst, tt.wantCap)
			}
		})
	}
}

// TestReturnFromSlowdownKeepsTheSlots: the held-out cell whose limit
// fell to 0.19 of the slots when a slowdown ×3 ended (see rebase: the
// window that read the speed shifted the capacity to its minimum) keeps
// the slots through the return.
func TestReturnFromSlowdownKeepsTheSlots(t *testing.T) {
	c := simCell{Mean: 0.5, Sigma: 0.7, Nodes: 2, Slots: 8, Offered: 2, Initial: 0.5, Reject: true, Change: "slow", Seed: 2, Gateways: 1, Algo: AlgoGradient}
	phaseKeepsSlots(t, c, 2, "return")
}

// TestSpedUp: a baseline below the old one is the backend's new speed
// when the throughput grew with it since the baseline last moved, and the
// old baseline's error when it did not.
func TestSpedUp(t *testing.T) {
	for _, tt := range []struct {
		name        string
		base, baseX float64 // the baseline and the throughput when it moved
		x, v        float64 // the throughput now and the new baseline
		want        bool
	}{
		{"3× faster, throughput ×2.75", 0.68, 20, 55, 0.21, true},
		{"3× faster, throughput as before (the old baseline read high)", 0.68, 20, 21, 0.21, false},
		{"slower", 0.21, 55, 20, 0.68, false},
		{"no throughput when the baseline moved", 0.68, 0, 55, 0.21, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 32, Min: 1, Max: 1000}, gradientStep)
			a.base = tt.base
			if got := a.spedUp(tt.v, a.base, tt.baseX, tt.x); got != tt.want {
				t.Fatalf("spedUp(%.2f) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

// TestProbeFindsFasterBackend: the held-out cell whose limit fell to 0.4
// of the slots when a slowdown ×3 ended: the window after the return read
// between the two speeds, and the scheduled probe below that read the new
// speed moved the baseline from 0.68 s to 0.21 s and the capacity with it
// by the difference × the throughput, 31.6 → 6.7 requests, although the
// throughput had grown threefold with the speed (see spedUp). Before,
// the return's fill 0.408 and its mean limit 13.3 of 32 slots.
func TestProbeFindsFasterBackend(t *testing.T) {
	c := simCell{Mean: 0.5, Sigma: 0.7, Nodes: 4, Slots: 8, Offered: 5, Initial: 0.5, Change: "slow", Seed: 3, Gateways: 1, Algo: AlgoGradient}
	r, err := runSim(c)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Phases[2]
	t.Logf("return: fill %.3f, mean limit %.1f over %d slots", p.Fill, p.MeanLim, p.Truth)
	if p.Fill < 0.85 || p.MeanLim < 0.8*float64(p.Truth) {
		t.Errorf("return: fill %.3f, mean limit %.1f over %d slots; want ≥ 0.85 and ≥ 0.8 × the slots", p.Fill, p.MeanLim, p.Truth)
	}
}

// TestUrgentProbeJudgesFromBeforeTheFasterWindow: a window that ran while
// the backend sped up read between the two speeds and became the
// baseline, the capacity kept in requests; the urgent probe it asked
// reads the rest of the speed-up. Judged from the baseline before that
// window, where the throughput grew with the speed, the capacity stays;
// where it did not, or with no such window (a baseline read high), the
// capacity moves with the baseline (see shiftBase).
func TestUrgentProbeJudgesFromBeforeTheFasterWindow(t *testing.T) {
	slow, between, fast := kindsTruth(0, 1.0), kindsTruth(0, 0.6), kindsTruth(0, 0.3)
	for _, tt := range []struct {
		name     string
		fastFrom [2]float64 // the baseline and throughput before the window
		stays    bool
	}{
		{"the throughput grew 22 → 55 a second with the speed", [2]float64{slow, 22}, true},
		{"the throughput grew 50 → 55 a second only", [2]float64{slow, 50}, false},
		{"no window read the backend faster", [2]float64{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := kindsStartUp(t, 64, 0, 0.6, 1)
			a.base, a.baseVar, a.baseX, a.x = between, 0.02*0.02, 52, 55
			a.capEst, a.fastFrom = 30, tt.fastFrom
			a.pool.reset()
			a.forgetDoubt()
			a.probe = prober{urgent: true}
			co := plainCohort(1000, 24, 0.3, rand.New(rand.NewPCG(1, 3)))
			co.off = a.kindOff
			a.endProbe(co)
			if a.base > (between+fast)/2 {
				t.Fatalf("the probe did not move the baseline: %.3f s (the window's %.3f, the probe's truth %.3f)", a.base, between, fast)
			}
			if stays := a.capEst == 30; stays != tt.stays {
				t.Errorf("capacity %.1f after the baseline moved %.3f → %.3f s, want it kept: %v", a.capEst, between, a.base, tt.stays)
			}
			if a.fastFrom != ([2]float64{}) {
				t.Errorf("fastFrom %v outlived the probe", a.fastFrom)
			}
		})
	}
}
