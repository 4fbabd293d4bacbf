package admit

import (
	"math"
	"testing"
)

// TestPoolSkipsCohortsJudgedEarly: a cohort judged with fewer than keep of
// its tickets back (evicted from a full ring) is not pooled into the
// baseline; one with keep of them back is, its tickets not back as the
// slowest.
func TestPoolSkipsCohortsJudgedEarly(t *testing.T) {
	const keep = 0.5
	tests := []struct {
		name       string
		back       int // of 8 tickets, the first back, the rest not
		wantPooled bool
	}{
		{"all back", 8, true},
		{"keep of them back", 4, true},
		{"fewer than keep back", 3, false},
		{"none back", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var co cohort
			co.reset(0, 8, cohortProbe)
			for i := range tt.back {
				co.lat[i] = 0.1 + 0.01*float64(i)
				co.got++
				co.n++
			}
			var p basePool
			p.add(&co, keep)
			switch {
			case tt.wantPooled && (p.count != 1 || p.n != 8):
				t.Fatalf("pooled %d probes, %d samples; want 1 probe of 8 samples", p.count, p.n)
			case !tt.wantPooled && (p.count != 0 || p.n != 0):
				t.Fatalf("pooled %d probes, %d samples; want none", p.count, p.n)
			}
			inf := 0
			for i := range p.n {
				if math.IsInf(p.lat[(p.head+i)%maxBase], 1) {
					inf++
				}
			}
			if tt.wantPooled && inf != 8-tt.back {
				t.Errorf("%d samples pooled as not back, want %d", inf, 8-tt.back)
			}
		})
	}
}
