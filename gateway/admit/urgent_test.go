package admit

import "testing"

// TestUrgentProbeTakesEnoughRequests: the urgent probe that checks a cut
// under a refusal's ceiling judges at least minWindow/4 requests however
// low its limit, since its one verdict decides whether the cut stands;
// other probes take a round trip at their limit, as before (longer urgent
// probes everywhere cost small queueing backends their capacity).
func TestUrgentProbeTakesEnoughRequests(t *testing.T) {
	for _, tt := range []struct {
		name     string
		urgent   bool
		long     bool
		wantWant int
	}{
		{"urgent, checking a cut under a ceiling", true, true, minWindow / 4},
		{"urgent, any other cut", true, false, 2},
		{"scheduled", false, false, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 12, Min: 1, Max: 100}, gradientStep)
			a.started = true
			a.est, a.capEst, a.noise = 4.1, 3.1, 0.5
			a.urgent, a.urgentLong = tt.urgent, tt.long
			a.startProbe(&windowStats{n: 21, target: 1, baseSE: 0.3}, false)
			if a.probe.phase != probeRunning || a.probe.limit != 2 {
				t.Fatalf("probe phase %d limit %d, want a probe running at 2", a.probe.phase, a.probe.limit)
			}
			if a.probe.want != tt.wantWant {
				t.Fatalf("the probe takes %d requests, want %d", a.probe.want, tt.wantWant)
			}
		})
	}
}

// TestCutUnderACeilingIsChecked: a cut right after a climb is taken as the
// climb's overshoot, unchecked; but while a refusal's ceiling held the
// limit below the climbing estimate nothing overshot, and the cut is
// checked by an urgent probe like any other (a backend that answers 429
// shows no queue, so its estimate climbs above the ceiling for good, and
// a slowdown read as a queue would cut it unchecked).
func TestCutUnderACeilingIsChecked(t *testing.T) {
	for _, tt := range []struct {
		name       string
		climb      int
		ceil       float64
		wantUrgent bool
		wantLong   bool // its probe judges at least minWindow/4 requests
	}{
		{"no climb", 0, 0, true, false},
		{"a climb's overshoot", 2, 0, false, false},
		{"a climb held under a ceiling", 2, 12, true, true},
		{"a climb under a ceiling above it", 2, 25, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 21, Min: 1, Max: 100}, gradientStep)
			a.started = true
			a.est, a.capEst, a.capVar, a.noise = 21, 19.7, 1, 1.6
			a.climb, a.ceil = tt.climb, tt.ceil
			// The window of a slowdown ×3 on 12 slots: 12 in flight, read
			// as 4.1 requests of queue.
			s := windowStats{n: 40, inflight: 12, queue: 4.11, winSE: 1.28, queueSE: 1.28, used: true}
			a.est = gradientStep(a, &s)
			if a.urgent != tt.wantUrgent || a.urgent && a.urgentLong != tt.wantLong {
				t.Fatalf("urgent = %v (long %v) after the cut to %.1f, want %v (long %v)", a.urgent, a.urgentLong, a.est, tt.wantUrgent, tt.wantLong)
			}
		})
	}
}

// TestRefusingBackendSlowerKeepsItsSlots: 3×4 slots that answer 429 when
// full get 3× slower and back (200 ms, σ 0.5, offered 3×, P0 at 45 % of
// the slowed capacity), on five seeds: the limit is the same number of
// slots, so the goodput keeps up with the static semaphore's and P0
// holds. Before the sixteenth pass the cut the slowdown caused was
// unchecked on a climbing estimate and its urgent probe judged two
// requests: the ratios were 0.869, 0.854, 0.967, 0.911 and 0.986 (mean
// 0.917), P0 0.931 on seed 2; since, 0.979, 0.983, 0.967, 0.961 and 0.990.
func TestRefusingBackendSlowerKeepsItsSlots(t *testing.T) {
	sum := 0.0
	const seeds = 5
	for seed := uint64(1); seed <= seeds; seed++ {
		c := simCell{Mean: 0.2, Sigma: 0.5, Nodes: 3, Slots: 4, Reject: true, Offered: 3, Initial: 1, Gateways: 1, Change: "slow", Seed: seed, Algo: AlgoGradient}
		r, rs, _, _, err := runPair(c)
		if err != nil {
			t.Fatal(err)
		}
		ratio := float64(r.Goodput) / float64(rs.Goodput)
		sum += ratio
		if r.P0() < accP0 {
			t.Errorf("seed %d: P0 %.4f, want ≥ %.3f (outcomes %v)", seed, r.P0(), accP0, r.Outcomes)
		}
		t.Logf("seed %d: goodput %.3f × the static semaphore's, P0 %.4f", seed, ratio, r.P0())
	}
	if mean := sum / seeds; mean < 0.95 {
		t.Errorf("mean goodput %.3f × the static semaphore's, want ≥ 0.95", mean)
	}
}
