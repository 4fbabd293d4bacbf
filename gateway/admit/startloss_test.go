package admit

import (
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
// the baseline, keep at least 88 × 0.406 ≈ 36 slots busy: the capacity
// cannot be read below that.
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
	s := windowStats{n: 35, inflight: 250.1, stat: 3.7704, se: 0.0783, x: 88.2, used: true, rts: 2}
	a.estimate(&s)
	floor := s.x * a.base
	if s.queue > s.inflight-floor+1e-9 {
		t.Errorf("queue estimate %.1f > in flight %.1f − busy slots %.1f", s.queue, s.inflight, floor)
	}
	est := gradientStep(a, &s)
	if est < floor {
		t.Errorf("limit after the window %.1f, want ≥ %.1f (x × base: the slots its throughput keeps busy); capacity estimate %.1f", est, floor, a.capEst)
	}
}
