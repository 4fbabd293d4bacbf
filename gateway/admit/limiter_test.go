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
		{"gradient full", LimiterConfig{Algorithm: AlgoGradient, Limit: 48, Min: 4, Max: 256, Tolerance: 1.2, Smoothing: 0.3, MinGradient: 0.6, WindowSamples: 32, ProbeInterval: 30, ProbeFraction: 0.6, ProbeSamples: 64, TimeoutMs: 5000}, ""},
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
		{"tolerance below 1", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Tolerance: 0.9}, "tolerance"},
		{"tolerance Inf", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, Tolerance: math.Inf(1)}, "tolerance"},
		{"negative timeout", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, TimeoutMs: -1}, "timeout_ms"},
		{"negative window", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, WindowSamples: -1}, "window_samples"},
		{"negative probe interval", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, ProbeInterval: -1}, "probe_interval"},
		{"probe fraction 1", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, ProbeFraction: 1}, "probe_fraction"},
		{"negative probe samples", LimiterConfig{Algorithm: AlgoAIMD, Limit: 10, ProbeSamples: -2}, "probe_samples"},
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

func TestAdaptiveDrops(t *testing.T) {
	tests := []struct {
		name string
		cfg  LimiterConfig
		want int // after one window of 48 samples with a drop
	}{
		{"aimd backs off ×0.9", LimiterConfig{Algorithm: AlgoAIMD, Limit: 48}, 43},               // 43.2
		{"aimd custom backoff", LimiterConfig{Algorithm: AlgoAIMD, Limit: 48, Backoff: 0.5}, 24}, // 24
		{"gradient steps halfway to ×0.5", LimiterConfig{Algorithm: AlgoGradient, Limit: 48}, 36},
		{"aimd min bounds", LimiterConfig{Algorithm: AlgoAIMD, Limit: 48, Min: 46}, 46},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := NewLimiter(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			feed(l, 47, 200*time.Millisecond, 48, false)
			feed(l, 1, 0, 48, true)
			if got := l.Limit(); got != tt.want {
				t.Fatalf("Limit() after a window with a drop = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestAdaptiveTimeoutIsDrop(t *testing.T) {
	l, _ := NewLimiter(LimiterConfig{Algorithm: AlgoAIMD, Limit: 48, TimeoutMs: 1000})
	feed(l, 47, 200*time.Millisecond, 48, false)
	feed(l, 1, 2*time.Second, 48, false)
	if got := l.Limit(); got != 43 {
		t.Fatalf("Limit() = %d after a sample over timeout_ms, want 43", got)
	}
}

// TestAdaptiveProbe: with no baseline yet, the first probe lowers the limit
// to half after two windows; once it has its samples (and stragglers) the
// limit returns, and windows at the baseline RTT grow it.
func TestAdaptiveProbe(t *testing.T) {
	for _, algo := range []string{AlgoAIMD, AlgoGradient} {
		t.Run(algo, func(t *testing.T) {
			l, _ := NewLimiter(LimiterConfig{Algorithm: algo, Limit: 40, ProbeSamples: 50})
			rtt := 100 * time.Millisecond
			feed(l, 48, rtt, 40, false) // window size is max(48, limit)
			if l.Limit() != 40 {
				t.Fatalf("after one window Limit() = %d, want 40", l.Limit())
			}
			feed(l, 48, rtt, 40, false)
			if l.Limit() != 20 {
				t.Fatalf("after two windows Limit() = %d, want the probe's 20", l.Limit())
			}
			feed(l, 30, rtt, 40, false) // started before the probe: ignored
			feed(l, 50, rtt, 20, false)
			if l.Limit() != 40 {
				t.Fatalf("after the probe's samples Limit() = %d, want 40 again", l.Limit())
			}
			feed(l, 20, rtt, 15, false) // stragglers
			if est, probing := l.(estimator).estimate(); probing || est != 40 {
				t.Fatalf("estimate() = %v, %v", est, probing)
			}
			feed(l, 48*3, rtt, 40, false) // three uncongested, used windows
			if l.Limit() <= 40 {
				t.Fatalf("Limit() = %d after windows at the baseline RTT, want growth", l.Limit())
			}
			before := l.Limit()
			feed(l, 48*3, 3*rtt, 40, false) // a queue: RTT tripled
			if l.Limit() >= before {
				t.Fatalf("Limit() = %d after windows at 3× the baseline RTT, want < %d", l.Limit(), before)
			}
		})
	}
}

// TestAdaptiveAppLimited: windows where inflight stays under half the limit
// do not grow it.
func TestAdaptiveAppLimited(t *testing.T) {
	l, _ := NewLimiter(LimiterConfig{Algorithm: AlgoAIMD, Limit: 40, ProbeSamples: 50})
	rtt := 100 * time.Millisecond
	feed(l, 2*48, rtt, 10, false)  // two windows, then the probe (at 20) starts
	feed(l, 50+20, rtt, 10, false) // probe samples and stragglers
	feed(l, 48*5, rtt, 10, false)
	if l.Limit() != 40 {
		t.Fatalf("Limit() = %d while app-limited, want 40", l.Limit())
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
