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
		a.Add(Sample{Time: t0.Add(time.Duration(el * float64(time.Second))), Elapsed: el, OfferedRPS: 150, CapacityRPS: 214, GoodputRPS: goodput(el)}, 0.25, 0, false, 0)
	}
	// Load stops: the last samples offer nothing (and answer nothing).
	for i := 121; i <= 128; i++ {
		el := float64(i) * 0.25
		a.Add(Sample{Time: t0.Add(time.Duration(el * float64(time.Second))), Elapsed: el, CapacityRPS: 214}, 0.25, 0, false, 0)
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

// recoveryRun is a recorded run of 30 s at 150 req/s offered against 214
// req/s of capacity, with model_latency from 5 s to 10 s and goodput at
// 40 req/s until 13 s (150 after), over generator windows that jitter as
// a machine's timers do when jitter is set (four of 249.9 ms, then one of
// 250.4 ms; exact 250 ms windows otherwise). It returns the samples and
// events a recording from the start writes, and the Aggregator fed the
// same.
func recoveryRun(jitter bool) ([]Sample, []Event, *Aggregator) {
	start := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	a := NewAggregator(start, 150)
	at5, at10 := start.Add(5*time.Second), start.Add(10*time.Second)
	events := []Event{
		{Time: at5, Elapsed: 5, Kind: EventFaultApply, Fields: map[string]any{"fault": "model_latency"}},
		{Time: at10, Elapsed: 10, Kind: EventFaultRevert, Fields: map[string]any{"fault": "model_latency"}},
	}
	var samples []Sample
	at := 0.0
	var offered, ok uint64
	for i := range 120 {
		w := 0.25
		if jitter {
			w = 0.2499
			if i%5 == 4 {
				w = 0.2504
			}
		}
		at += w
		good := 150.0
		if at > 5 && at < 13 {
			good = 40
		}
		offered += uint64(150*w + 0.5)
		ok += uint64(good*w + 0.5)
		samples = append(samples, Sample{
			Time: start.Add(time.Duration(at * float64(time.Second))), Elapsed: math.Round(at*1000) / 1000, WindowS: w,
			TargetRPS: 150, OfferedRPS: 150, GoodputRPS: good, CapacityRPS: 214,
			OfferedTotal: offered, OutcomeTotal: map[string]uint64{"ok": ok},
		})
	}
	for i, x := range samples {
		if i == 20 {
			a.FaultApplied("model_latency", at5)
		}
		if i == 40 {
			a.FaultReverted("model_latency", at10)
		}
		a.Add(x, x.WindowS, 0, false, 0)
	}
	return samples, events, a
}

// TestRecoveryInTheLoadsSeconds: recovery_s is judged per second of the
// load's clock, the seconds the goodput ratio uses, so timer jitter in the
// generator's windows does not move it (goodput is back in second 13,
// 3 s after the fault's end, however the windows fell), and a killed
// run's rebuild from its samples and events reads what the finished run's
// Aggregator read.
func TestRecoveryInTheLoadsSeconds(t *testing.T) {
	for _, jitter := range []bool{false, true} {
		samples, events, a := recoveryRun(jitter)
		last := samples[len(samples)-1]
		want := a.recovery(last.Time.Sub(a.started).Seconds())
		if want == nil || !want.Recovered || want.RecoveryS != 3 || want.FaultsEndS != 10 {
			t.Fatalf("jitter %v: recovery %+v, want recovered 3 s after the fault's end at 10 s", jitter, want)
		}
		r := killedRun(t, samples, events)
		got := r.Summary.Recovery
		if got == nil {
			t.Fatalf("jitter %v: no recovery rebuilt, %+v by the Aggregator", jitter, want)
		}
		if got.Recovered != want.Recovered || math.Abs(got.RecoveryS-want.RecoveryS) > 0.001 || math.Abs(got.FaultsEndS-want.FaultsEndS) > 0.001 ||
			math.Abs(got.BaselineRatio-want.BaselineRatio) > 2e-6 || math.Abs(got.GoodputRatio-want.GoodputRatio) > 2e-6 {
			t.Errorf("jitter %v: recovery %+v rebuilt, %+v by the Aggregator", jitter, got, want)
		}
	}
}
