package admit

import (
	"math"
	"testing"
	"time"
)

// TestRefusalsAreNotMeasurements: a call every node refused (429) is
// handled by the refusal's ceiling; it measures neither latency nor
// throughput, and a window of refusals is no congested window. Counted
// as drops, a burst of refusals (the nodes' slots cut to a quarter)
// backed the estimate off by a tenth a window and started a probe whose
// requests were refused too, down to the minimum within two service
// times; counted as completions, refusals multiplied the throughput the
// queue is read with.
func TestRefusalsAreNotMeasurements(t *testing.T) {
	const limit = 20
	a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: limit, Min: 1, Max: 100})
	// The start-up: every request taken, 100 ms, no queue.
	tickets := takeTickets(a, limit)
	clk.t = clk.t.Add(100 * time.Millisecond)
	for _, tk := range tickets {
		a.OnSample(Sample{RTT: 100 * time.Millisecond, Inflight: limit, Ticket: tk})
	}
	if a.base == 0 {
		t.Fatal("the start-up measured no baseline")
	}
	est := a.est
	// Then the nodes refuse everything, fast, for a while.
	for range 200 {
		tk := a.Ticket()
		clk.t = clk.t.Add(time.Millisecond)
		a.OnSample(Sample{RTT: time.Millisecond, Inflight: 5, Dropped: true, Refused: true, Ticket: tk})
	}
	if a.ceil != 4 {
		t.Errorf("ceiling %.0f after refusals at 5 in flight, want 4", a.ceil)
	}
	if a.est < est {
		t.Errorf("estimate %.1f after 200 refusals, want at least %.1f (refusals are the ceiling's, not a congested window's)", a.est, est)
	}
}

// TestRefusalsAreNotCompletions: the throughput counts the calls that
// completed, not the refusals between them.
func TestRefusalsAreNotCompletions(t *testing.T) {
	run := func(refusals bool) float64 {
		a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Min: 1, Max: 100})
		for range 400 {
			clk.t = clk.t.Add(10 * time.Millisecond)
			a.OnSample(Sample{RTT: 100 * time.Millisecond, Inflight: 10, Ticket: a.Ticket()})
			if refusals {
				a.OnSample(Sample{RTT: time.Millisecond, Inflight: 11, Dropped: true, Refused: true, Ticket: a.Ticket()})
			}
		}
		return a.throughput()
	}
	plain, refused := run(false), run(true)
	t.Logf("throughput: %.1f/s, with a refusal after each completion %.1f/s", plain, refused)
	if plain < 95 || plain > 105 || math.Abs(refused-plain) > 0.01*plain {
		t.Errorf("throughput %.1f/s, with refusals %.1f/s; want 100/s both", plain, refused)
	}
}

// TestRefusingCutReturns: 500 ms, σ 0.7, two gateways in front of 4 × 8
// slots that answer 429, 2× offered, a start at twice the slots, the
// slots cut to a quarter and back, seed 2. With refusals counted as a
// congested window's drops, one gateway's estimate fell to 1 at the cut
// (a probe after each backed-off window, refused as well) and was still
// 1 after the slots came back: the return's fill 0.903, the run's goodput
// 0.957 of the static semaphore's.
func TestRefusingCutReturns(t *testing.T) {
	c := simCell{Mean: 0.5, Sigma: 0.7, Nodes: 4, Slots: 8, Offered: 2, Initial: 2, Reject: true, Change: "slots", Seed: 2, Gateways: 2, Algo: AlgoGradient}
	r, st, _, _, err := runPair(c)
	if err != nil {
		t.Fatal(err)
	}
	ret := r.Phases[2]
	ratio := float64(r.Goodput) / float64(st.Goodput)
	t.Logf("return: fill %.3f, mean limit %.1f over %d slots; goodput %.3f of the static semaphore's; P0 %.4f", ret.Fill, ret.MeanLim, ret.Truth, ratio, r.P0())
	if ret.Fill < 0.95 || ratio < 0.97 {
		t.Errorf("return fill %.3f, goodput %.3f of the static semaphore's; want ≥ 0.95 and ≥ 0.97", ret.Fill, ratio)
	}
}

// TestRefusedAloneSetsTheCeiling: a call refused by every node while it
// was the gateway's only one in flight sets the ceiling at the minimum.
// Once refusals stopped counting as a window's drops (which backed the
// estimate off), nothing else held such a gateway's limit: behind five
// gateways in front of 3 × 4 slots cut to a quarter, each gateway holding
// one call or none, the summed limit floated at 16 over the 3 slots, the
// excess calls cycling through refusals.
func TestRefusedAloneSetsTheCeiling(t *testing.T) {
	a := newAdaptive(LimiterConfig{Algorithm: AlgoGradient, Limit: 6, Min: 1, Max: 100}, gradientStep)
	a.base = 0.1
	a.OnSample(Sample{RTT: time.Millisecond, Inflight: 1, Dropped: true, Refused: true, Ticket: 0})
	if a.ceil != 1 || a.Limit() != 1 {
		t.Fatalf("refused alone: ceiling %.0f, limit %d; want 1 and 1", a.ceil, a.Limit())
	}
	c := simCell{Mean: 0.2, Sigma: 0.5, Nodes: 3, Slots: 4, Offered: 3, Initial: 1, Reject: true, Change: "slots", Seed: 1, Gateways: 5, Algo: AlgoGradient}
	r, err := runSim(c)
	if err != nil {
		t.Fatal(err)
	}
	cut := r.Phases[1]
	t.Logf("under the cut: the summed limit's mean %.1f over %d slots", cut.MeanLim, cut.Truth)
	if cut.MeanLim > float64(c.Gateways)+1 {
		t.Errorf("under the cut: summed limit %.1f over %d slots, want at most %d (a call each, and one more)", cut.MeanLim, cut.Truth, c.Gateways+1)
	}
}
