package admit

import (
	"testing"
	"time"
)

// TestStartUpAsksAgain: a start-up cohort whose every request was refused
// (the nodes full with other gateways' calls) measured no baseline. The
// next cohort is a start-up again; before, the limiter went on with no
// baseline, every window read its whole concurrency as a queue, the limit
// sat at its minimum, and without a baseline no refusal was recognised
// as one (traced below: one gateway of three at a limit of 1 for 200
// service times).
func TestStartUpAsksAgain(t *testing.T) {
	const limit = 8
	a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: limit, Min: 1, Max: 100})
	// The start-up cohort: every request refused by every node.
	for range limit {
		tk := a.Ticket()
		clk.t = clk.t.Add(time.Millisecond)
		a.OnSample(Sample{RTT: time.Millisecond, Inflight: limit, Dropped: true, Refused: true, Ticket: tk})
	}
	if a.base != 0 {
		t.Fatalf("baseline %.4f after a start-up of refusals, want none", a.base)
	}
	// The next requests are taken: 100 ms each, no queue.
	for round := range 4 {
		tickets := takeTickets(a, a.Limit())
		clk.t = clk.t.Add(100 * time.Millisecond)
		for _, tk := range tickets {
			a.OnSample(Sample{RTT: 100 * time.Millisecond, Inflight: len(tickets), Ticket: tk})
		}
		t.Logf("round %d: %d requests, baseline %.4f, limit %d", round, len(tickets), a.base, a.Limit())
	}
	if a.base < 0.09 || a.base > 0.11 {
		t.Errorf("baseline %.4f after four round trips of 100 ms, want about 0.1", a.base)
	}
	if a.Limit() < limit {
		t.Errorf("limit %d after four round trips with no queue, want at least the initial %d", a.Limit(), limit)
	}
}

// TestRefusedStartUpMeasures: three gateways in front of 3 × 4 slots
// that answer 429, 5 s calls, σ 0.5, 3× offered, the nodes 3× slower and
// back, seed 1. One gateway's start-up cohort was refused throughout;
// without a baseline its limit sat at 1 for 200 service times (P0 there
// read 0.936, the run's goodput 0.944 of the static semaphore's). Every
// gateway has its baseline 50 service times in.
func TestRefusedStartUpMeasures(t *testing.T) {
	c := simCell{Mean: 5, Sigma: 0.5, Nodes: 3, Slots: 4, Offered: 3, Initial: 1, Reject: true, Change: "slow", Seed: 1, Gateways: 3, Algo: AlgoGradient}
	var bases []float64
	debugTick = func(s *sim) {
		if bases != nil || s.cell.Algo == AlgoStatic || s.now < 50*s.mean {
			return
		}
		for i := range s.gws {
			bases = append(bases, adaptiveOf(s.gws[i].bh.Limiter()).base)
		}
	}
	defer func() { debugTick = nil }()
	r, err := runSim(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("baselines 50 service times in: %v s; P0 %.4f", bases, r.P0())
	if len(bases) != c.Gateways {
		t.Fatalf("%d gateways seen, want %d", len(bases), c.Gateways)
	}
	for i, b := range bases {
		if b <= 0 {
			t.Errorf("gateway %d has no baseline 50 service times in", i)
		}
	}
}

// TestStartUpJumps: a start-up cohort with no queue at all says the
// capacity is at least the initial limit; the limit jumps at once to
// 1/startShare of it, the most the start-up's baseline allows for.
// Before, it climbed from the initial limit by a quarter, then doubling,
// a step every window or two: a start at a quarter of the capacity spent
// about six service times below it.
func TestStartUpJumps(t *testing.T) {
	const limit = 12
	a, clk := newAdaptiveForTest(t, LimiterConfig{Algorithm: AlgoGradient, Limit: limit, Min: 1, Max: 1000})
	tickets := takeTickets(a, limit)
	for i, tk := range tickets {
		clk.t = clk.t.Add(10 * time.Millisecond)
		a.OnSample(Sample{RTT: time.Duration(90+i) * time.Millisecond, Inflight: limit, Ticket: tk})
	}
	if want := int(limit / startShare); a.Limit() != want {
		t.Errorf("limit %d after a start-up cohort of %d with no queue, want %d", a.Limit(), limit, want)
	}
	if !a.slowStart {
		t.Errorf("not in the slow start after the jump: the queue's growth with the next steps is what ends it")
	}
}
