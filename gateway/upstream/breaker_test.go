package upstream

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	cfg := BreakerConfig{FailureRatio: 0.5, MinRequests: 4, Window: 2 * time.Second, OpenFor: 2 * time.Second, HalfOpenProbes: 2}
	// Each op: 'S' admitted success, 'F' admitted failure, 'x' expect refusal,
	// 'a' admit only (no record yet), '+' advance 1s. After the ops, want state.
	tests := []struct {
		name string
		ops  string
		want BreakerState
	}{
		{"fresh", "", StateClosed},
		{"successes", "SSSSSSSS", StateClosed},
		{"below min requests", "FFF", StateClosed},
		{"opens at min requests", "FFFF", StateOpen},
		{"ratio below", "SSSFSSSF", StateClosed},
		{"ratio reached", "SSFF", StateOpen},
		{"open refuses", "FFFFx", StateOpen},
		{"still open before OpenFor", "FFFF+x", StateOpen},
		{"half open after OpenFor", "FFFF++", StateHalfOpen},
		{"half-open limits probes", "FFFF++aax", StateHalfOpen},
		{"probes close it", "FFFF++SS", StateClosed},
		{"failed probe reopens", "FFFF++SF", StateOpen},
		{"reopened waits again", "FFFF++F+x", StateOpen},
		{"closed window is fresh", "FFFF++SSFFF", StateClosed},
		{"old failures roll out", "FFF++SSSF", StateClosed},
		{"window keeps recent", "FF+FF", StateOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			b := NewBreaker(cfg, clk)
			for i, op := range tt.ops {
				switch op {
				case '+':
					clk.Advance(time.Second)
				case 'x':
					if _, ok := b.Allow(); ok {
						t.Fatalf("op %d: Allow admitted in state %v", i, b.State())
					}
				case 'a':
					if _, ok := b.Allow(); !ok {
						t.Fatalf("op %d: Allow refused in state %v", i, b.State())
					}
				case 'S', 'F':
					gen, ok := b.Allow()
					if !ok {
						t.Fatalf("op %d: Allow refused in state %v", i, b.State())
					}
					b.Record(gen, op == 'F')
				}
			}
			if got := b.State(); got != tt.want {
				t.Fatalf("state %v, want %v", got, tt.want)
			}
		})
	}
}

// An outcome admitted before a state change must not count after it.
func TestBreakerStaleGeneration(t *testing.T) {
	clk := newFakeClock()
	b := NewBreaker(BreakerConfig{FailureRatio: 0.5, MinRequests: 2, Window: time.Second, OpenFor: time.Second, HalfOpenProbes: 1}, clk)
	stale, _ := b.Allow()
	for range 2 {
		g, _ := b.Allow()
		b.Record(g, true)
	}
	clk.Advance(time.Second)
	probe, ok := b.Allow()
	if !ok || b.State() != StateHalfOpen {
		t.Fatalf("want a half-open probe, state %v", b.State())
	}
	b.Record(stale, true) // late failure from before opening
	if b.State() != StateHalfOpen {
		t.Fatalf("stale failure changed state to %v", b.State())
	}
	b.Record(probe, false)
	if b.State() != StateClosed {
		t.Fatalf("probe success: state %v, want closed", b.State())
	}
}

func TestBreakerStateString(t *testing.T) {
	for s, want := range map[BreakerState]string{StateClosed: "closed", StateHalfOpen: "half_open", StateOpen: "open", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}

// An admission given back unused frees its half-open probe slot and records
// no outcome.
func TestBreakerUnadmit(t *testing.T) {
	clk := newFakeClock()
	b := NewBreaker(BreakerConfig{FailureRatio: 1, MinRequests: 1, Window: time.Second, OpenFor: time.Second, HalfOpenProbes: 1}, clk)
	g, _ := b.Allow()
	b.Record(g, true)
	clk.Advance(time.Second)
	g, ok := b.Allow()
	if !ok {
		t.Fatal("half-open refused its first probe")
	}
	if _, ok := b.Allow(); ok {
		t.Fatal("half-open admitted a second probe")
	}
	b.unadmit(g)
	if b.State() != StateHalfOpen {
		t.Fatalf("unadmit changed state to %v", b.State())
	}
	g, ok = b.Allow()
	if !ok {
		t.Fatal("probe slot not freed by unadmit")
	}
	b.Record(g, false)
	if b.State() != StateClosed {
		t.Fatalf("state %v, want closed", b.State())
	}
}
