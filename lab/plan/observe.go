package plan

import (
	"math"
	"sort"
	"strings"
	"time"
)

// endWindow is the span of the trailing median of the limit at the end of
// a run.
const endWindow = 5.0 // seconds

// minPhase is the shortest phase worth a line (shorter ones are the ticks
// around a fault's start or end).
const minPhase = 1.0 // seconds

// Observed is what a run measured, as far as its files tell.
type Observed struct {
	Partial bool // a killed run: counters rebuilt from samples, no latencies
	// GoodputRPS is ok answers a second over the run; CapacityRPS the mean
	// of live slots / mean service time; CapacityMeasuredRPS the nodes'
	// completions a second while every slot was busy (0: never all busy).
	GoodputRPS, CapacityRPS, CapacityMeasuredRPS float64
	AdmittedP50, AdmittedP99                     time.Duration // 0 when unknown
	// ServiceT is the nodes' observed mean service time and ServiceFrom
	// how it was found; ServiceFrom is "" when the files cannot tell.
	ServiceT    time.Duration
	ServiceFrom string
	Samples     int
	// Phases cut the loaded part of the run by the faults active in it
	// (nil without samples).
	Phases []Phase
	// EndLimit is the median of the gateways' summed concurrency limit over
	// the last endWindow seconds of load; 0 without samples.
	EndLimit float64
	Kills    []Kill // node kills, from the summary
}

// Phase is a stretch of the run with the same faults active. Values are
// medians over its ticks; Limit and Inflight are summed over gateways.
type Phase struct {
	Label     string
	From, To  float64 // seconds since the start
	Limit     float64
	LiveSlots float64
	Inflight  float64
	Load      float64       // offered / capacity; 0 when unknown
	ServiceT  time.Duration // live slots / capacity; 0 when unknown
}

// Kill is one node_kill fault and how the limit followed it (summary.json).
type Kill struct {
	At, End   float64
	LiveSlots float64
	Settled   bool
	SettleS   float64
}

func observe(r *recorded, slots int) *Observed {
	s := r.summary
	o := &Observed{
		Partial:             r.partial,
		GoodputRPS:          s.GoodputRPS,
		CapacityRPS:         s.CapacityRPS,
		CapacityMeasuredRPS: s.CapacityMeasuredRPS,
		Samples:             len(r.samples),
	}
	if !r.partial {
		o.AdmittedP50, o.AdmittedP99 = ms(s.AdmittedP50Ms), ms(s.AdmittedP99Ms)
	}
	killed := false
	for _, f := range s.Faults {
		if f.Fault == "node_kill" {
			killed = true
			if f.LiveSlots > 0 {
				o.Kills = append(o.Kills, Kill{At: f.AtS, End: f.EndS, LiveSlots: f.LiveSlots, Settled: f.Settled, SettleS: f.LimitSettleS})
			}
		}
	}
	if len(r.samples) > 0 {
		o.fromSamples(r.samples)
	}
	if o.ServiceFrom == "" && !killed && s.CapacityRPS > 0 && slots > 0 {
		// Capacity is slots / mean service time, averaged over the run: with
		// every node up all along, that gives the mean back.
		o.ServiceT = time.Duration(float64(slots) / s.CapacityRPS * float64(time.Second))
		o.ServiceFrom = "summary"
	}
	return o
}

// fromSamples fills the phases, the end limit and the observed service
// time from the samples taken while load was offered.
func (o *Observed) fromSamples(all []sample) {
	var loaded []sample
	for _, x := range all {
		if !x.GatewayStale && x.OfferedRPS > 0 {
			loaded = append(loaded, x)
		}
	}
	if len(loaded) == 0 {
		return
	}
	var svc []float64
	for _, x := range loaded {
		if t := serviceOf(x); t > 0 {
			svc = append(svc, t)
		}
	}
	if len(svc) > 0 {
		o.ServiceT = time.Duration(median(svc) * float64(time.Second))
		o.ServiceFrom = "samples"
	}
	last := loaded[len(loaded)-1].Elapsed
	var end []float64
	for _, x := range loaded {
		if x.Elapsed >= last-endWindow {
			end = append(end, x.ConcurrencyLimit)
		}
	}
	o.EndLimit = median(end)

	// Phases: consecutive ticks with the same faults active.
	start := 0
	for i := 1; i <= len(loaded); i++ {
		if i < len(loaded) && faultLabel(loaded[i]) == faultLabel(loaded[start]) {
			continue
		}
		if p := phaseOf(loaded[start:i]); p.To-p.From >= minPhase {
			o.Phases = append(o.Phases, p)
		}
		start = i
	}
}

// peakTarget is the highest target rate the samples recorded (req/s; 0
// without samples): the schedule as it ran, with rates set by hand in the
// dashboard, spikes and traffic_spike faults, which run.json's experiment
// does not hold.
func peakTarget(all []sample) float64 {
	peak := 0.0
	for _, x := range all {
		if x.TargetRPS > peak && !math.IsInf(x.TargetRPS, 0) {
			peak = x.TargetRPS
		}
	}
	return peak
}

// serviceOf is a tick's observed mean service time in seconds: its live
// slots over the capacity the lab computed from them; 0 when unknown.
func serviceOf(x sample) float64 {
	live := liveSlots(x)
	if live <= 0 || x.CapacityRPS <= 0 {
		return 0
	}
	return live / x.CapacityRPS
}

func liveSlots(x sample) float64 {
	var n float64
	for _, nd := range x.Nodes {
		if nd.Up {
			n += nd.Slots
		}
	}
	return n
}

func phaseOf(ticks []sample) Phase {
	p := Phase{Label: faultLabel(ticks[0]), From: ticks[0].Elapsed, To: ticks[len(ticks)-1].Elapsed}
	var lim, live, infl, svc, load []float64
	for _, x := range ticks {
		if x.CapacityRPS > 0 {
			load = append(load, x.OfferedRPS/x.CapacityRPS)
		}
		lim = append(lim, x.ConcurrencyLimit)
		live = append(live, liveSlots(x))
		infl = append(infl, x.Inflight)
		if t := serviceOf(x); t > 0 {
			svc = append(svc, t)
		}
	}
	p.Limit, p.LiveSlots, p.Inflight, p.Load = median(lim), median(live), median(infl), median(load)
	if len(svc) > 0 {
		p.ServiceT = time.Duration(median(svc) * float64(time.Second))
	}
	return p
}

// faultLabel names the faults active in a tick ("" when none).
func faultLabel(x sample) string {
	var parts []string
	for _, f := range x.Faults {
		s := f.Name
		if f.Detail != "" {
			s += " " + f.Detail
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(v float64) time.Duration {
	if math.IsNaN(v) || v <= 0 {
		return 0
	}
	return time.Duration(v * float64(time.Millisecond))
}
