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
	// BaselineRatio is ok over min(offered, capacity), summed per second
	// of the load's clock, in the 10 s before the first fault (1 when
	// nothing came before it): the level to come back to. A gateway that sheds on purpose (a rate limit) has a low one.
	BaselineRatio float64 `json:"baseline_ratio"`
	// RecoveryS is the time from FaultsEndS until goodput stayed at ≥ 80 %
	// of the baseline (judged per second of the load's clock, the goodput
	// ratio's seconds) to the end of the run; Recovered
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

// recovery computes RecoverySummary (see recoveryOf); endS is the
// recording's end in its own clock (seconds from a.started). mu held.
func (a *Aggregator) recovery(endS float64) *RecoverySummary {
	// The faults in the load's clock (Sample.Elapsed), where the ticks'
	// seconds are: the recording's clock plus where it started on the
	// load's.
	fs := make([]faultWindow, len(a.faults))
	for i, f := range a.faults {
		fs[i] = f
		fs[i].start += a.origin
		if f.end >= 0 {
			fs[i].end += a.origin
		}
	}
	return recoveryOf(a.digests, fs, endS+a.origin, a.origin)
}

// recoveryOf is the RecoverySummary of the ticks ds after faults, both in
// the load's clock (Sample.Elapsed), for a recording that ends at endS and
// began at origin on that clock (its times, FaultsEndS, count from
// origin); nil when there was no fault, or one was still active at the
// end. A finished run's Aggregator and a killed run's rebuild call it with
// the same recorded values.
//
// Goodput and usable capacity are summed per second of the load's clock,
// a tick counted in the second that holds its window's middle (digest.mid,
// see tickSecond), as the goodput ratio's are: the baseline over the ticks
// whose middle lies in the baselineS before the first fault, the recovery
// over those whose middle lies after the last fault's end, each second
// judged on its own (the first one after the faults has only the ticks
// after their end). Windows built from the recording's own ticks, closed
// once their dt added up to 1 s, grouped 3 or 4 ticks by timer jitter
// alone, so the same run read another recovery_s on each replay, and one
// rebuilt from its samples could not agree with its summary.
func recoveryOf(ds []digest, faults []faultWindow, endS, origin float64) *RecoverySummary {
	if len(faults) == 0 {
		return nil
	}
	last, first := math.Inf(-1), math.Inf(1)
	for _, f := range faults {
		if f.end < 0 {
			return nil
		}
		last, first = math.Max(last, f.end), math.Min(first, f.start)
	}
	r := &RecoverySummary{FaultsEndS: round(last-origin, 3), RecoveryS: round(math.Max(endS-last, 0), 3), BaselineRatio: 1}
	var before, after []second
	for _, d := range ds {
		switch {
		case d.dt <= 0:
		case d.mid > last:
			after = addToSecond(after, d)
		case d.mid < first && d.mid >= first-baselineS:
			before = addToSecond(before, d)
		}
	}
	if ok, usable := sumSeconds(before); usable > 0 {
		r.BaselineRatio = round(math.Min(ok/usable, 1), 6)
	}
	if ok, usable := sumSeconds(after); usable > 0 {
		r.GoodputRatio = round(ok/usable, 6)
	}
	// A second with (almost) nothing offered — after load stopped — says
	// nothing either way.
	since := -1.0
	for _, s := range after {
		usable := s.usable()
		if usable < 1 {
			continue
		}
		good := s.ok >= recoveredShare*r.BaselineRatio*usable
		switch {
		case !good:
			since = -1
		case since < 0:
			since = math.Max(s.k, last)
		}
	}
	if since >= 0 {
		r.Recovered = true
		r.RecoveryS = round(since-last, 3)
	}
	return r
}

// second is what the ticks counted in the second [k, k+1) of the load's
// clock add up to: ok and offered requests and capacity × dt.
type second struct{ k, ok, offered, capacity float64 }

func (s second) usable() float64 { return math.Min(s.offered, s.capacity) }

// addToSecond adds d to the last of secs, or to a new second when d's is
// another (ticks come in order).
func addToSecond(secs []second, d digest) []second {
	k := math.Floor(d.mid)
	if len(secs) == 0 || secs[len(secs)-1].k != k {
		secs = append(secs, second{k: k})
	}
	s := &secs[len(secs)-1]
	s.ok += d.ok
	s.offered += d.offered
	s.capacity += d.capacity * d.dt
	return secs
}

// sumSeconds is the ok requests and the usable capacity over secs.
func sumSeconds(secs []second) (ok, usable float64) {
	for _, s := range secs {
		ok += s.ok
		usable += s.usable()
	}
	return ok, usable
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
