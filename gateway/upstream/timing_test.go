package upstream

import (
	"testing"
	"time"
)

func TestLatencyHistQuantile(t *testing.T) {
	var h latencyHist
	if _, ok := h.quantile(0.5); ok {
		t.Fatal("empty histogram has a quantile")
	}
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.9, 900 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got, _ := h.quantile(tt.q)
		if r := float64(got) / float64(tt.want); r < 0.9 || r > 1.1 {
			t.Errorf("q%.2f = %v, want %v ± 10 %%", tt.q, got, tt.want)
		}
	}
	var edge latencyHist
	edge.add(time.Nanosecond)
	edge.add(time.Hour)
	if lo, _ := edge.quantile(0.5); lo != binValue(0) {
		t.Errorf("below the floor: %v, want the first bin %v", lo, binValue(0))
	}
	if hi, _ := edge.quantile(1); hi != binValue(histBins-1) {
		t.Errorf("above the top: %v, want the last bin %v", hi, binValue(histBins-1))
	}
}

func TestLatencyWindowRolls(t *testing.T) {
	clk := newFakeClock()
	w := newLatencyWindow(10*time.Second, clk.Now())
	w.add(clk.Now(), 100*time.Millisecond)
	clk.Advance(5 * time.Second)
	w.add(clk.Now(), 300*time.Millisecond)
	var h latencyHist
	w.sum(clk.Now(), &h)
	if h.count != 2 {
		t.Fatalf("count %d after 5 s, want 2", h.count)
	}
	clk.Advance(6 * time.Second) // the first sample is 11 s old
	h = latencyHist{}
	w.sum(clk.Now(), &h)
	if q, _ := h.quantile(0.5); h.count != 1 || q != binValue(binOf(300*time.Millisecond)) {
		t.Fatalf("after 11 s: count %d median %v, want only the 300 ms sample", h.count, q)
	}
	clk.Advance(time.Minute)
	h = latencyHist{}
	w.sum(clk.Now(), &h)
	if h.count != 0 {
		t.Fatalf("a minute later: count %d, want 0", h.count)
	}
}

// timing derives an attempt's timeout and hedge delay from seeded
// quantile state: the node's own once it has MinSamples, else the pool's;
// bounded by the caller's deadline.
func TestTiming(t *testing.T) {
	bin := func(d time.Duration) time.Duration { return binValue(binOf(d)) }
	tests := []struct {
		name      string
		own, peer []time.Duration // samples on node 0 and node 1
		remaining time.Duration   // 0: no deadline
		cfg       func(*Config)
		timeout   time.Duration
		hedge     time.Duration
	}{
		{name: "nothing measured", timeout: 0, hedge: 0},
		{name: "own quantile", own: repeat(100*time.Millisecond, 50), peer: repeat(100*time.Millisecond, 50),
			timeout: 2 * bin(100*time.Millisecond), hedge: bin(100 * time.Millisecond)},
		{name: "too few own samples: the pool's", own: repeat(time.Second, 5), peer: repeat(100*time.Millisecond, 50),
			timeout: 2 * bin(100*time.Millisecond), hedge: bin(100 * time.Millisecond)},
		{name: "slow node: hedged at the pool's speed", own: repeat(300*time.Millisecond, 50), peer: repeat(100*time.Millisecond, 150),
			timeout: 2 * bin(300*time.Millisecond), hedge: bin(100 * time.Millisecond)},
		{name: "floor", own: repeat(time.Millisecond, 50), peer: repeat(time.Millisecond, 50),
			timeout: DefaultAttemptMin, hedge: bin(time.Millisecond)},
		// 2 × 100 ms does not fit a retry of 100 ms into 250 ms: cut to
		// 250 − 100 = 150 ms (≥ the node's median, 100 ms).
		{name: "cut to leave a retry room", own: repeat(100*time.Millisecond, 50), peer: repeat(100*time.Millisecond, 50),
			remaining: 250 * time.Millisecond, timeout: 250*time.Millisecond - bin(100*time.Millisecond), hedge: bin(100 * time.Millisecond)},
		// Room for a retry would leave this attempt less than its median:
		// no cut; and 2 × 100 ms ≥ 150 ms: the deadline alone bounds it.
		{name: "deadline bounds it", own: repeat(100*time.Millisecond, 50), peer: repeat(100*time.Millisecond, 50),
			remaining: 150 * time.Millisecond, timeout: 0, hedge: bin(100 * time.Millisecond)},
		{name: "no hedge past the deadline", own: repeat(100*time.Millisecond, 50), peer: repeat(100*time.Millisecond, 50),
			remaining: 50 * time.Millisecond, timeout: 0, hedge: 0},
		{name: "multiplier and quantile", own: spread(10*time.Millisecond, 100), peer: spread(10*time.Millisecond, 100),
			cfg: func(c *Config) {
				c.AttemptTimeout = AttemptTimeoutConfig{Quantile: 0.5, Multiplier: 3, Min: time.Millisecond}
			},
			timeout: time.Duration(3 * float64(bin(500*time.Millisecond))), hedge: bin(950 * time.Millisecond)},
		{name: "disabled", own: repeat(100*time.Millisecond, 50), peer: repeat(100*time.Millisecond, 50),
			cfg: func(c *Config) { c.AttemptTimeout.Disabled = true; c.Hedge.Disabled = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Nodes: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			p := newPool(t, cfg, WithClock(newFakeClock()))
			for _, d := range tt.own {
				seedLatency(p, 0, "c", d, 1)
			}
			for _, d := range tt.peer {
				seedLatency(p, 1, "c", d, 1)
			}
			timeout, hedge := p.timing(p.nodes[0], "c", tt.remaining, tt.remaining > 0)
			if timeout != tt.timeout || hedge != tt.hedge {
				t.Fatalf("timeout %v hedge %v, want %v and %v", timeout, hedge, tt.timeout, tt.hedge)
			}
			if other, _ := p.timing(p.nodes[0], "other", tt.remaining, tt.remaining > 0); other != 0 {
				t.Fatalf("a class never seen got timeout %v", other)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// spread returns n samples step, 2·step, …, n·step.
func spread(step time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * step
	}
	return out
}
