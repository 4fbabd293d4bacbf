package admit

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLimiterConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   LimiterConfig
		field string // "" means valid
	}{
		{"static", LimiterConfig{Algorithm: AlgoStatic, Limit: 10}, ""},
		{"static ignores adaptive knobs", LimiterConfig{Algorithm: AlgoStatic, Limit: 10, Min: 50}, ""},
		{"aimd defaults", LimiterConfig{Algorithm: AlgoAIMD, Limit: 48}, ""},
		{"gradient full", LimiterConfig{Algorithm: AlgoGradient, Limit: 48, Min: 4, Max: 256, QueueTarget: 3, Quantile: 0.1, Smoothing: 0.3, MinGradient: 0.6, WindowSamples: 32, TimeoutMs: 5000}, ""},
		{"missing algorithm", LimiterConfig{Limit: 10}, "algorithm"},
		{"unknown algorithm", LimiterConfig{Algorithm: "vegas", Limit: 10}, "algorithm"},
		{"zero limit", LimiterConfig{Algorithm: AlgoStatic}, "limit"},
		{"negative limit", LimiterConfig{Algorithm: AlgoAIMD, Limit: -4}, "limit"},
		{"min above limit", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Min: 20}, "min"},
		{"negative min", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Min: -1}, "min"},
		{"max below limit", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Max: 5}, "max"},
		{"negative max", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Max: -5}, "max"},
		{"backoff 1", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Backoff: 1}, "backoff"},
		{"backoff negative", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Backoff: -0.5}, "backoff"},
		{"backoff NaN", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Backoff: math.NaN()}, "backoff"},
		{"negative queue target", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, QueueTarget: -1}, "queue_target"},
		{"queue target Inf", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, QueueTarget: math.Inf(1)}, "queue_target"},
		{"negative timeout", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, TimeoutMs: -1}, "timeout_ms"},
		{"negative window", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, WindowSamples: -1}, "window_samples"},
		{"quantile 1", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Quantile: 1}, "quantile"},
		{"quantile NaN", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Quantile: math.NaN()}, "quantile"},
		{"smoothing above 1", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, Smoothing: 1.5}, "smoothing"},
		{"min gradient above 1", LimiterConfig{Algorithm: AlgoGradient, Limit: 10, MinGradient: 2}, "min_gradient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := NewLimiter(tt.cfg)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("NewLimiter = %v", err)
				}
				if got := l.Limit(); got != tt.cfg.Limit {
					t.Fatalf("initial Limit() = %d, want the configured %d (adaptive limiters start there, not at min)", got, tt.cfg.Limit)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "field "+tt.field) {
				t.Fatalf("NewLimiter = %v, want an error naming field %q", err, tt.field)
			}
		})
	}
}

func TestStaticAndLimiterFunc(t *testing.T) {
	s := NewStatic(7)
	s.OnSample(time.Hour, 100, true)
	if s.Limit() != 7 {
		t.Fatalf("static limit moved to %d", s.Limit())
	}
	s.Set(0)
	if s.Limit() != 1 {
		t.Fatalf("Set(0) gave %d, want 1", s.Limit())
	}
	n := 3
	var l Limiter = LimiterFunc(func() int { return n })
	l.OnSample(time.Second, 1, true)
	n = 9
	if l.Limit() != 9 {
		t.Fatalf("LimiterFunc.Limit() = %d, want 9", l.Limit())
	}
}

// feed sends n samples of rtt at inflight.
func feed(l Limiter, n int, rtt time.Duration, inflight int, dropped bool) {
	for i := 0; i < n; i++ {
		l.OnSample(rtt, inflight, dropped)
	}
}

// startUp feeds an adaptive limiter with Limit lim through its start-up
// probe: the probe halves the limit at the first sample with lim (≥ lim −
// 1) in flight, skips what was
// admitted before (lim + lim/2 samples), then needs two windows
// (2×max(96, 2×lim) samples, the last lim/2 after the limit is restored)
// from requests started at ≤ lim/2 in flight, at base RTT.
func startUp(t *testing.T, l Limiter, lim int, base time.Duration) {
	t.Helper()
	probe := lim / 2
	feed(l, 1, base, lim, false)
	if l.Limit() != probe {
		t.Fatalf("after the first sample Limit() = %d, want the start-up probe's %d", l.Limit(), probe)
	}
	feed(l, lim+probe-1, base, lim, false) // admitted before the probe
	want := 2 * max(96, 2*lim)
	feed(l, want-probe, base, probe, false)
	if l.Limit() != lim {
		t.Fatalf("after the probe's samples Limit() = %d, want %d restored", l.Limit(), lim)
	}
	feed(l, probe, base, probe, false) // the probe's stragglers
	if _, probing := l.(estimator).estimate(); probing {
		t.Fatal("still probing after the start-up probe's samples")
	}
}

// TestAdaptiveQueueEstimate: a window whose p25 RTT sits above the
// baseline by W reads as W × X queued requests (X = inflight / mean RTT);
// the gradient limit moves to inflight − queue,
// AIMD cuts ×0.9; windows at the baseline grow both.
func TestAdaptiveQueueEstimate(t *testing.T) {
	base := 100 * time.Millisecond
	tests := []struct {
		name     string
		algo     string
		rtt      time.Duration // of every sample of the next window
		min, max int           // Limit() after it
	}{
		// 40 in flight at 150 ms: X = 267/s, W = 50 ms, queue 13.3, so
		// the capacity is 40 − 13.3 = 26.7: all the way there at the
		// default Smoothing.
		{"gradient aims at the capacity", AlgoGradient, 150 * time.Millisecond, 26, 27},
		{"aimd backs off", AlgoAIMD, 150 * time.Millisecond, 36, 36},
		// 40 in flight at 105 ms: queue 1.9 ≤ 3: calm.
		{"gradient grows when calm", AlgoGradient, 105 * time.Millisecond, 41, 42},
		{"aimd grows when calm", AlgoAIMD, 105 * time.Millisecond, 41, 42},
		{"gradient grows at the baseline", AlgoGradient, base, 42, 43},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := NewLimiter(LimiterConfig{Algorithm: tt.algo, Limit: 40})
			if err != nil {
				t.Fatal(err)
			}
			startUp(t, l, 40, base)
			feed(l, 96, tt.rtt, 40, false)
			if got := l.Limit(); got < tt.min || got > tt.max {
				t.Fatalf("Limit() = %d after a window at %v, want in [%d, %d]", got, tt.rtt, tt.min, tt.max)
			}
		})
	}
}

// TestAdaptiveDrops: a window with more than 5 % drops backs off ×0.9
// whatever its RTT; a sample over timeout_ms is a drop; fewer drops are
// only slow samples.
func TestAdaptiveDrops(t *testing.T) {
	base := 100 * time.Millisecond
	for _, algo := range []string{AlgoAIMD, AlgoGradient} {
		t.Run(algo, func(t *testing.T) {
			l, _ := NewLimiter(LimiterConfig{Algorithm: algo, Limit: 40})
			startUp(t, l, 40, base)
			feed(l, 90, base, 40, false)
			feed(l, 6, 0, 40, true)
			if got := l.Limit(); got != 36 {
				t.Fatalf("Limit() after a window with 6 %% drops = %d, want 36", got)
			}
			l, _ = NewLimiter(LimiterConfig{Algorithm: algo, Limit: 40, TimeoutMs: 1000})
			startUp(t, l, 40, base)
			feed(l, 90, base, 40, false)
			feed(l, 6, 2*time.Second, 40, false)
			if got := l.Limit(); got != 36 {
				t.Fatalf("Limit() after a window with 6 samples over timeout_ms = %d, want 36", got)
			}
			l, _ = NewLimiter(LimiterConfig{Algorithm: algo, Limit: 40})
			startUp(t, l, 40, base)
			feed(l, 94, base, 40, false)
			feed(l, 2, 0, 40, true)
			if got := l.Limit(); got <= 40 {
				t.Fatalf("Limit() after a calm window with 2 %% drops = %d, want growth", got)
			}
		})
	}
}

// TestAdaptivePeriodicProbe: after probeEvery/4 calm windows (the first
// probes come faster) the limit drops to 80 % until a window of requests
// started at that concurrency has finished; a probe that finds a slower
// backend moves the baseline toward it.
func TestAdaptivePeriodicProbe(t *testing.T) {
	base := 100 * time.Millisecond
	l, _ := NewLimiter(LimiterConfig{Algorithm: AlgoGradient, Limit: 40, Min: 4, Max: 40})
	startUp(t, l, 40, base)
	for range probeEvery / 4 {
		feed(l, 96, base, 40, false)
	}
	if got := l.Limit(); got != 32 {
		t.Fatalf("Limit() = %d after %d calm windows, want the probe's 32", got, probeEvery/4)
	}
	feed(l, 50, base, 40, false) // started before the probe: not the probe's
	if got := l.Limit(); got != 32 {
		t.Fatalf("Limit() = %d, want 32 until the probe has its samples", got)
	}
	feed(l, 96-32, 2*base, 32, false) // the backend got slower
	if got := l.Limit(); got != 40 {
		t.Fatalf("Limit() = %d after the probe's samples, want 40 restored", got)
	}
	feed(l, 32, 2*base, 32, false)
	// The baseline is now the mean of 100 ms and 200 ms: windows at 200 ms
	// read as a queue, so the limit falls (and later probes correct it).
	// (The 50 samples from before the probe began the current window.)
	feed(l, 2*96, 2*base, 40, false)
	if got := l.Limit(); got >= 40 {
		t.Fatalf("Limit() = %d after a window above the new baseline, want < 40", got)
	}
}

// TestAdaptiveStartUpWaitsForDemand: the start-up probe (and so the
// baseline) waits until demand reaches the limit; before, samples change
// nothing.
func TestAdaptiveStartUpWaitsForDemand(t *testing.T) {
	for _, algo := range []string{AlgoAIMD, AlgoGradient} {
		l, _ := NewLimiter(LimiterConfig{Algorithm: algo, Limit: 40})
		feed(l, 500, 100*time.Millisecond, 20, false)
		if est, probing := l.(estimator).estimate(); l.Limit() != 40 || est != 40 || !probing {
			t.Fatalf("%s: Limit() = %d, estimate %v, %v under light demand, want 40 and the probe still pending", algo, l.Limit(), est, probing)
		}
		startUp(t, l, 40, 100*time.Millisecond)
	}
}

// TestAdaptiveAppLimited: windows where inflight stays under half the limit
// do not grow it.
func TestAdaptiveAppLimited(t *testing.T) {
	for _, algo := range []string{AlgoAIMD, AlgoGradient} {
		l, _ := NewLimiter(LimiterConfig{Algorithm: algo, Limit: 40})
		startUp(t, l, 40, 100*time.Millisecond)
		feed(l, 96*3, 100*time.Millisecond, 10, false)
		if l.Limit() != 40 {
			t.Fatalf("%s: Limit() = %d while app-limited, want 40", algo, l.Limit())
		}
	}
}

func TestLimitersConcurrent(t *testing.T) {
	for _, algo := range []string{AlgoStatic, AlgoAIMD, AlgoGradient} {
		l, _ := NewLimiter(LimiterConfig{Algorithm: algo, Limit: 32, Min: 2, Max: 64})
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 2000; i++ {
					l.OnSample(time.Duration(50+i%300)*time.Millisecond, 1+i%40, i%97 == 0)
					if n := l.Limit(); n < 2 || n > 64 {
						t.Errorf("%s: Limit() = %d outside [2, 64]", algo, n)
						return
					}
				}
			}(g)
		}
		wg.Wait()
	}
}
