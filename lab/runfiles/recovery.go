package runfiles

import (
	"fmt"
	"math"
)

// RecoverySummary is how goodput came back after the run's faults ended:
// the metastable-failure check. A system that recovers serves again, within
// seconds of the trigger's end, the share of what it could serve
// (min(offered, capacity)) that it served before the trigger; one caught in
// a retry storm stays low long after it.
type RecoverySummary struct {
	// FaultsEndS is when the last fault was reverted (seconds of the run).
	FaultsEndS float64 `json:"faults_end_s"`
	// BaselineRatio is ok over min(offered, capacity) in the 10 s before
	// the first fault (1 when nothing came before it): the level to come
	// back to. A gateway that sheds on purpose (a rate limit) has a low one.
	BaselineRatio float64 `json:"baseline_ratio"`
	// RecoveryS is the time from FaultsEndS until goodput stayed at ≥ 80 %
	// of the baseline (judged per second) to the end of the run; Recovered
	// is false when it never did (RecoveryS is then the time observed).
	RecoveryS float64 `json:"recovery_s"`
	Recovered bool    `json:"recovered"`
	// GoodputRatio is ok over min(offered, capacity) from FaultsEndS to the
	// end of the run.
	GoodputRatio float64 `json:"goodput_ratio"`
}

// Recovery thresholds.
const (
	// recoveredShare is the share of the baseline that counts as
	// recovered: low enough that one second's Poisson noise (a few %) never
	// reads as a relapse, high enough that a storm still running does.
	recoveredShare  = 0.8
	recoveryWindowS = 1.0  // seconds per judgement
	baselineS       = 10.0 // how far before the first fault the baseline looks
)

// recovery computes RecoverySummary; nil when the run had no fault, or a
// fault was still active at its end. mu held.
func (a *Aggregator) recovery(endS float64) *RecoverySummary {
	if len(a.faults) == 0 {
		return nil
	}
	last, first := 0.0, math.Inf(1)
	for _, f := range a.faults {
		if f.end < 0 {
			return nil
		}
		last, first = math.Max(last, f.end), math.Min(first, f.start)
	}
	r := &RecoverySummary{FaultsEndS: round(last, 3), RecoveryS: round(math.Max(endS-last, 0), 3), BaselineRatio: 1}
	var bOK, bUsable float64
	for _, d := range a.digests {
		if d.elapsed < first && d.elapsed >= first-baselineS && d.dt > 0 {
			bOK += d.ok
			bUsable += math.Min(d.offered, d.capacity*d.dt)
		}
	}
	if bUsable > 0 {
		r.BaselineRatio = round(math.Min(bOK/bUsable, 1), 6)
	}
	// Windows of recoveryWindowS from the faults' end.
	type win struct{ start, ok, usable float64 }
	var wins []win
	var ok, usable float64
	for _, d := range a.digests {
		if d.elapsed <= last || d.dt <= 0 {
			continue
		}
		if len(wins) == 0 || d.elapsed > wins[len(wins)-1].start+recoveryWindowS {
			wins = append(wins, win{start: d.elapsed - d.dt})
		}
		w := &wins[len(wins)-1]
		u := math.Min(d.offered, d.capacity*d.dt)
		w.ok += d.ok
		w.usable += u
		ok += d.ok
		usable += u
	}
	if usable > 0 {
		r.GoodputRatio = round(ok/usable, 6)
	}
	// A second with (almost) nothing offered — after load stopped — says
	// nothing either way.
	since := -1.0
	for _, w := range wins {
		if w.usable < 1 {
			continue
		}
		good := w.ok >= recoveredShare*r.BaselineRatio*w.usable
		switch {
		case !good:
			since = -1
		case since < 0:
			since = w.start
		}
	}
	if since >= 0 {
		r.Recovered = true
		r.RecoveryS = round(math.Max(since-last, 0), 3)
	}
	return r
}

// recoveryMetric is Summary.Metric for recovery_s and
// goodput_ratio_after_faults.
func (s *Summary) recoveryMetric(name string) (float64, string) {
	r := s.Recovery
	if r == nil {
		return math.NaN(), "no fault that ended in this run"
	}
	if name == "goodput_ratio_after_faults" {
		return r.GoodputRatio, ""
	}
	if !r.Recovered {
		return math.Inf(1), fmt.Sprintf("goodput never came back to %.0f%% of its level before the faults in the %.1f s after they ended", recoveredShare*100, r.RecoveryS)
	}
	return r.RecoveryS, ""
}
