package runfiles

import (
	"math"
	"testing"
	"time"
)

// feedRecovery folds 4 Hz samples into an aggregator: offered and
// capacity constant, goodput given per second of the run; one fault from
// 5 s to 10 s.
func feedRecovery(goodput func(sec float64) float64) *Aggregator {
	t0 := time.Unix(1_000_000, 0)
	a := NewAggregator(t0, 150)
	a.FaultApplied("model_latency", t0.Add(5*time.Second))
	a.FaultReverted("model_latency", t0.Add(10*time.Second))
	for i := 1; i <= 120; i++ { // 30 s
		el := float64(i) * 0.25
		a.Add(Sample{Time: t0.Add(time.Duration(el * float64(time.Second))), OfferedRPS: 150, CapacityRPS: 214, GoodputRPS: goodput(el)}, 0.25, 0, false, 0)
	}
	// Load stops: the last samples offer nothing (and answer nothing).
	for i := 121; i <= 128; i++ {
		el := float64(i) * 0.25
		a.Add(Sample{Time: t0.Add(time.Duration(el * float64(time.Second))), CapacityRPS: 214}, 0.25, 0, false, 0)
	}
	return a
}

func TestRecovery(t *testing.T) {
	for _, tt := range []struct {
		name      string
		goodput   func(float64) float64
		recovered bool
		within    [2]float64 // recovery_s range
		ratio     [2]float64
	}{
		{"recovers 3 s after the fault", func(s float64) float64 {
			if s > 5 && s < 13 {
				return 40
			}
			return 150
		}, true, [2]float64{2.5, 3.5}, [2]float64{0.85, 0.95}},
		{"metastable: stays low", func(s float64) float64 {
			if s > 5 {
				return 10
			}
			return 150
		}, false, [2]float64{22, 22}, [2]float64{0.06, 0.07}},
		{"a late dip starts the count again", func(s float64) float64 {
			if s > 5 && s < 11 || s > 20 && s < 23 {
				return 40
			}
			return 150
		}, true, [2]float64{12.5, 13.5}, [2]float64{0.8, 0.9}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := feedRecovery(tt.goodput)
			r := a.recovery(32)
			if r == nil || r.FaultsEndS != 10 || r.Recovered != tt.recovered {
				t.Fatalf("recovery %+v", r)
			}
			if r.RecoveryS < tt.within[0] || r.RecoveryS > tt.within[1] {
				t.Errorf("recovery_s %v, want %v", r.RecoveryS, tt.within)
			}
			if r.GoodputRatio < tt.ratio[0] || r.GoodputRatio > tt.ratio[1] {
				t.Errorf("goodput ratio after %v, want %v", r.GoodputRatio, tt.ratio)
			}
			s := Summary{Recovery: r}
			v, note := s.Metric("recovery_s")
			if tt.recovered && v != r.RecoveryS || !tt.recovered && (!math.IsInf(v, 1) || note == "") {
				t.Errorf("metric %v %q", v, note)
			}
		})
	}
	// A gateway that serves half of what it could before the fault (a rate
	// limit) has recovered when it serves half again.
	a0 := feedRecovery(func(s float64) float64 {
		if s > 5 && s < 12 {
			return 10
		}
		return 75
	})
	if r := a0.recovery(32); r == nil || !r.Recovered || r.BaselineRatio < 0.45 || r.BaselineRatio > 0.55 || r.RecoveryS > 2.5 {
		t.Errorf("half-served baseline: %+v", r)
	}
	// Without faults, or with one still active, there is nothing to judge.
	a := NewAggregator(time.Unix(0, 0), 1)
	if a.recovery(10) != nil {
		t.Error("recovery without faults")
	}
	a.FaultApplied("x", time.Unix(1, 0))
	if a.recovery(10) != nil {
		t.Error("recovery with a fault still active")
	}
}
