package runfiles

import (
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
)

// partialSummary rebuilds what it can of a killed run's Summary from its
// samples, its events and run.json (info, nil when unreadable) — no
// latency histograms, no thresholds — the way Summarize makes it, so that
// the figures read the same as a finished run's:
//
//   - a recording started while load ran (it has a record_start event)
//     counts from its first sample: its duration, target integral, ticks
//     and counts (the samples' totals, the lab's since the load started,
//     less the first sample's) cover the recorded span alone, and its
//     times (Started, the faults') count from that sample;
//   - the duration is the load's: until the run_end event (the load stops
//     there; the samples go on while requests in flight drain), or without
//     one until the last sample that saw a request offered; rates are over
//     it, the target integrated (trapezoids) up to it;
//   - the goodput ratio is ok over the usable capacity, as Summarize's
//     (capacityAndRatio over the ticks, in the same seconds), each tick
//     over the generator's window its sample records (Sample.WindowS), as
//     the Aggregator's; a run recorded before samples kept it has each
//     tick over the samples' elapsed times instead, which are rounded to
//     the millisecond (a 250 ms tick read up to 1 ms, 0.4 %, long or short);
//   - the recovery after faults is recoveryOf over the same ticks, with
//     the faults' windows from the fault_apply and fault_revert events;
//   - the Redis is the one the run's child_start event names, else
//     run.json's, with the fallbacks summed from the samples and the
//     failovers from the redis_failover events;
//   - the global rate limit is the Aggregator's (globalLimits) over the
//     same ticks and faults, for the limits run.json's experiment sets.
func partialSummary(samples []Sample, events []Event, info *RunInfo) *Summary {
	last := samples[len(samples)-1]
	// Sample.Elapsed counts from the load's start.
	loadStart := samples[0].Time.Add(-time.Duration(samples[0].Elapsed * float64(time.Second)))
	// The recording's span, on the load's clock: from the load's start, or
	// for a recording started while load ran, from its first sample, whose
	// totals (the lab's since the load started) are subtracted.
	var base *Sample
	from := 0.0
	if startedMidRun(events) {
		base, from = &samples[0], samples[0].Elapsed
	}
	s := &Summary{
		Started:    loadStart.Add(time.Duration(from * float64(time.Second))),
		DurationS:  round(math.Max(loadEnd(samples, events, loadStart)-from, 0), 3),
		ByPriority: map[string]PrioritySummary{},
	}
	s.addPartialCounts(last, base)
	ds := make([]digest, 0, len(samples))
	var target, fallbacks float64
	prev, prevTarget := from, samples[0].TargetRPS
	for i, x := range samples {
		s.Gateway.LagP99Ms = max(s.Gateway.LagP99Ms, x.LagProbeP99Ms)
		s.Gateway.SchedLatencyP99Ms = max(s.Gateway.SchedLatencyP99Ms, x.SchedLatencyP99Ms)
		s.Gateway.MaxHeapBytes = max(s.Gateway.MaxHeapBytes, x.GatewayHeap())
		s.Gateway.MaxGoroutines = max(s.Gateway.MaxGoroutines, x.Goroutines)
		s.Gateway.MaxRSSBytes = max(s.Gateway.MaxRSSBytes, x.GatewayRSS())
		if base != nil && i == 0 {
			continue // its window lies before the recording's counts
		}
		dt := x.Elapsed - prev
		if x.WindowS > 0 {
			dt = x.WindowS
		}
		if until := math.Min(x.Elapsed, from+s.DurationS); until > prev {
			target += (prevTarget + x.TargetRPS) / 2 * (until - prev)
		}
		mid := tickMid(prev, i > 0, x.Elapsed, dt)
		prev, prevTarget = x.Elapsed, x.TargetRPS
		d := digest{elapsed: x.Elapsed, dt: dt, second: math.Floor(mid), mid: mid, offered: x.OfferedRPS * dt, ok: x.GoodputRPS * dt, capacity: x.CapacityRPS,
			prio: make(map[string]prioTotals, len(x.ByPriority))}
		for name, p := range x.ByPriority {
			d.prio[name] = prioTotals{offered: p.OfferedTotal, passed: p.PassedRateLimitTotal, reference: p.ReferencePassedTotal}
		}
		ds = append(ds, d)
		fallbacks += x.RedisFallbackRPS * dt
	}
	ok := float64(s.Outcomes[wire.OutcomeOK.String()])
	s.CapacityRPS, s.GoodputRatio = capacityAndRatio(ds, ok)
	if d := s.DurationS; d > 0 {
		s.GoodputRPS = round(ok/d, 3)
		s.AchievedRPS = round(float64(s.Offered)/d, 3)
		s.TargetRPS = round(target/d, 3)
	}
	if target > 0 {
		s.AchievedRateError = round(math.Abs(float64(s.Offered)-target)/target, 6)
	}
	faults := partialFaults(events, loadStart, from)
	s.Recovery = recoveryOf(ds, faults, last.Elapsed, from)
	if info != nil && info.Experiment != nil {
		// GlobalLimits wants a normalized experiment: ReadRunInfo
		// normalized it, and refused one that does not normalize.
		s.RateLimit = (&Aggregator{digests: ds, faults: faults}).globalLimits(info.Experiment.GlobalLimits())
	}
	s.Redis = partialRedis(events, info, s.Started)
	if s.Redis.Kind != experiment.RedisOff {
		s.Redis.Fallbacks = math.Round(fallbacks)
	}
	return s
}

// startedMidRun reports whether the events are those of a recording
// started while load ran (the dashboard's record key): such a recording
// has a record_start event; one from the start (levee run, --record) has
// none.
func startedMidRun(events []Event) bool {
	for _, e := range events {
		if e.Kind == EventRecordStart {
			return true
		}
	}
	return false
}

// addPartialCounts sets the offered and outcome counts, overall and per
// priority, and the OOM kills: last's totals, less base's when the
// recording counts from base (nil: from the load's start).
func (s *Summary) addPartialCounts(last Sample, base *Sample) {
	var b Sample
	if base != nil {
		b = *base
	}
	s.Offered = since(last.OfferedTotal, b.OfferedTotal)
	outcomes := map[string]uint64{}
	for o, n := range last.OutcomeTotal {
		outcomes[o] = since(n, b.OutcomeTotal[o])
	}
	s.setOutcomes(outcomes)
	for _, p := range load.Priorities {
		ps, bs := last.ByPriority[p], b.ByPriority[p]
		v := PrioritySummary{Offered: since(ps.OfferedTotal, bs.OfferedTotal), OK: since(ps.OKTotal, bs.OKTotal), SuccessRate: 1}
		if v.Offered > 0 {
			v.SuccessRate = round(float64(v.OK)/float64(v.Offered), 6)
		}
		s.ByPriority[p] = v
	}
	s.Gateway.OOMKills = max(last.OOMKills-b.OOMKills, 0)
}

// since is a counter's increase from b to n (0 if it went down, which a
// counter from the load's start never does).
func since(n, b uint64) uint64 {
	if n < b {
		return 0
	}
	return n - b
}

// loadEnd is how long the load ran, in seconds from started: until the
// run_end event, else until the last sample in which the offered count
// grew (the last sample when it never did), never past the last sample.
func loadEnd(samples []Sample, events []Event, started time.Time) float64 {
	last := samples[len(samples)-1].Elapsed
	for _, e := range events {
		if e.Kind == EventRunEnd {
			if end := e.Time.Sub(started).Seconds(); end > 0 && end < last {
				return end
			}
			return last
		}
	}
	end, offered := last, samples[0].OfferedTotal
	for i, x := range samples {
		if i == 0 || x.OfferedTotal > offered {
			end, offered = x.Elapsed, x.OfferedTotal
		}
	}
	return end
}

// partialFaults is the faults' windows the fault_apply and fault_revert
// events record, in seconds of the load's clock (from loadStart), by the
// Aggregator's rules (faultApplied, faultReverted): an apply while the
// fault's window is open joins it; a revert with no apply before it is of
// a fault already active when the recording began, at from; a fault never
// reverted has end −1.
func partialFaults(events []Event, loadStart time.Time, from float64) []faultWindow {
	var fs []faultWindow
	for _, e := range events {
		name, _ := e.Fields["fault"].(string)
		at := e.Time.Sub(loadStart).Seconds()
		switch e.Kind {
		case EventFaultApply:
			fs = faultApplied(fs, name, at)
		case EventFaultRevert:
			fs = faultReverted(fs, name, at, from)
		}
	}
	return fs
}

// partialRedis is the run's Redis: the kind and address its child_start
// event says (the server the lab ran, or a cluster's first node), else
// run.json's experiment kind and resolved URL, else off; with the
// failovers its redis_failover events record.
func partialRedis(events []Event, info *RunInfo, started time.Time) RedisSummary {
	r := RedisSummary{Kind: experiment.RedisOff}
	if info != nil && info.Experiment != nil && info.Experiment.Redis.Enabled() {
		r.Kind = info.Experiment.Redis.Kind
		if u, err := url.Parse(info.Resolved.Redis); err == nil {
			r.Addr = u.Host
		}
	}
	found := false
	for _, e := range events {
		switch {
		case e.Kind == EventChildStart && !found && (e.Detail == "redis" || strings.HasPrefix(e.Detail, "redis-")):
			kind, _ := e.Fields["kind"].(string)
			addr, _ := e.Fields["addr"].(string)
			if kind != "" {
				r.Kind, r.Addr, found = kind, addr, true
			}
		case e.Kind == EventRedisFailover:
			f := RedisFailover{}
			f.Killed, _ = e.Fields["killed"].(string)
			f.By, _ = e.Fields["by"].(string)
			f.AfterS, _ = e.Fields["after_s"].(float64)
			f.Error, _ = e.Fields["error"].(string)
			f.AtS = round(e.Time.Sub(started).Seconds()-f.AfterS, 3)
			r.Failovers = append(r.Failovers, f)
		}
	}
	return r
}
