package htmlreport

import (
	"math"
	"strings"

	"github.com/levee-lab/levee/internal/wire"
)

// frame is one run's series on the plotted intervals, by key (see
// computeFrame). Every series has one value per interval; NaN is a gap.
type frame struct {
	x      values
	series map[string]values
	// hasHist is false for a run recorded before samples carried
	// histograms: its latency series are gaps.
	hasHist bool
	// hasFinished is false for a run recorded before samples carried
	// finished_total: its success rates are the sampler's trailing rate.
	hasFinished bool
	// hasAdmittedTotal is true when the samples carry the gateways'
	// admissions (admitted_total); older runs' admitted series is the
	// admitted requests the clients saw end.
	hasAdmittedTotal bool
	// badHist counts histograms that did not decode.
	badHist int
	// gateways is the run's gateway count (0: unknown); rssPerGateway
	// whether its samples give one gateway's RSS (perGatewayRSS).
	gateways      int
	rssPerGateway bool
	// heapPerGateway is whether its samples give one gateway's heap
	// (perGatewayHeap).
	heapPerGateway bool
	// capacityConfigured is true when some tick's capacity was partly the
	// nodes' configured service time (Sample.CapacityConfiguredRPS): those
	// ticks are left out of the capacity series.
	capacityConfigured bool
}

// The outcomes that are not a shed but not a success either.
var failureOutcomes = []string{outcomeTimeout, outcomeError, outcomeFallback, outcomeDropped}

// computeFrame reduces a run's samples to one value per interval:
//   - rates from the cumulative counters: Δcount / Δt, exact;
//   - success per priority: Δok / Δfinished of the interval;
//   - latency percentiles from the interval's merged histograms;
//   - gateway percentiles (lag, scheduling latency, GC pause), heap, RSS and
//     goroutines: the largest value reported in the interval (percentiles
//     are never averaged);
//   - other gauges (queue, in-flight, limit, slots, capacity, nodes up and
//     ejected, gateway shed, retry, hedge and fallback rates): time-weighted
//     means.
//
// Gateway values of a tick without a current scrape (GatewayStale) are
// left out, and so is the capacity of a tick that took part of it from the
// nodes' configured service time (Sample.CapacityConfiguredRPS); an
// interval with none is a gap, never a zero.
func computeFrame(r *Run, tl timeline, iv float64) frame {
	bs := tl.buckets(r.Samples, iv)
	f := frame{x: make(values, len(bs)), series: map[string]values{}, gateways: runGateways(r), rssPerGateway: perGatewayRSS(r), heapPerGateway: perGatewayHeap(r)}
	for _, s := range r.Samples {
		if s.AdmittedHist != "" || s.ByPriority["P0"].Hist != "" {
			f.hasHist = true
		}
		if s.AdmittedTotal > 0 {
			f.hasAdmittedTotal = true
		}
		if s.CapacityConfiguredRPS > 0 {
			f.capacityConfigured = true
		}
		for _, p := range s.ByPriority {
			if p.FinishedTotal > 0 {
				f.hasFinished = true
			}
		}
	}
	m := newMerger()
	for i, b := range bs {
		f.x[i] = b.x
		if len(b.s) == 0 {
			continue
		}
		f.addCounters(i, b)
		f.addSuccess(i, b)
		if f.hasHist {
			f.addLatency(i, b, m)
		}
		f.addGateway(i, b)
		f.addMeans(i, b)
	}
	f.badHist = m.bad
	return f
}

// get returns the series key, all gaps until set.
func (f *frame) get(key string) values {
	v, ok := f.series[key]
	if !ok {
		v = nan(len(f.x))
		f.series[key] = v
	}
	return v
}

// addCounters sets interval i's rates from the counters' change over b.
func (f *frame) addCounters(i int, b bucket) {
	if b.dt <= 0 {
		return
	}
	last := &b.s[len(b.s)-1]
	delta := func(c func(*sample) uint64) float64 {
		var from uint64
		if b.prev != nil {
			from = c(b.prev)
		}
		to := c(last)
		if to < from {
			return math.NaN()
		}
		return float64(to - from)
	}
	outcome := func(o string) float64 {
		return delta(func(s *sample) uint64 { return s.OutcomeTotal[o] })
	}
	f.get("offered")[i] = delta(func(s *sample) uint64 { return s.OfferedTotal }) / b.dt
	f.get("goodput")[i] = outcome(outcomeOK) / b.dt
	if f.hasAdmittedTotal {
		// The gateways' admissions, counted when admitted.
		var from float64
		if b.prev != nil {
			from = b.prev.AdmittedTotal
		}
		if d := last.AdmittedTotal - from; d >= 0 {
			f.get("admitted")[i] = d / b.dt
		}
	} else {
		// An older run: admitted requests counted when the clients saw them end.
		f.get("admitted")[i] = (outcome(outcomeOK) + outcome(outcomeFallback) + outcome(outcomeTimeout) + outcome(outcomeError)) / b.dt
	}
	for _, o := range outcomeNames {
		if reason, ok := strings.CutPrefix(o, "shed_"); ok {
			f.get("shed." + reason)[i] = outcome(o) / b.dt
		}
	}
	for _, o := range failureOutcomes {
		f.get("failed." + o)[i] = outcome(o) / b.dt
	}
}

// addSuccess sets interval i's success rate per priority: ok / finished of
// the interval (a gap when nothing finished), or for an older run the
// sampler's trailing rate.
func (f *frame) addSuccess(i int, b bucket) {
	last := b.s[len(b.s)-1]
	for _, p := range priorityNames {
		out := f.get("success." + p)
		if f.hasFinished {
			fin := deltaPrio(b, p, func(ps prioritySample) uint64 { return ps.FinishedTotal })
			ok := deltaPrio(b, p, func(ps prioritySample) uint64 { return ps.OKTotal })
			if fin > 0 {
				out[i] = 100 * ok / fin
			}
		} else if ps, ok := last.ByPriority[p]; ok && ps.OfferedTotal > 0 {
			out[i] = 100 * ps.SuccessRate
		}
	}
}

// addLatency sets interval i's percentiles from its merged histograms.
func (f *frame) addLatency(i int, b bucket, m *merger) {
	m.reset()
	for _, s := range b.s {
		m.add(s.AdmittedHist)
	}
	f.get("latency.admitted_p50")[i] = m.ms(50)
	f.get("latency.admitted_p99")[i] = m.ms(99)
	m.reset()
	for _, s := range b.s {
		m.add(s.ByPriority["P0"].Hist)
	}
	f.get("latency.p0_p99")[i] = m.ms(99)
}

// addGateway sets interval i's gateway percentiles and peaks: the largest
// value of the ticks with a current scrape.
func (f *frame) addGateway(i int, b bucket) {
	gwMax := func(key string, v func(*sample) float64) {
		out := f.get(key)
		for j := range b.s {
			if b.s[j].GatewayStale {
				continue
			}
			if x := v(&b.s[j]); math.IsNaN(out[i]) || x > out[i] {
				out[i] = x
			}
		}
	}
	gwMax("lag_probe_p99", func(s *sample) float64 { return s.LagProbeP99Ms })
	gwMax("sched_latency_p99", func(s *sample) float64 { return s.SchedLatencyP99Ms })
	gwMax("gc_pause_p99", func(s *sample) float64 { return s.GCPauseP99Ms })
	// heap_mb is one gateway's (the largest's), like rss_mb; a run
	// recorded before the largest gateway's heap was kept, with several
	// (or an unknown number of) gateways, has only the sum: drawn as
	// heap_sum_mb, never under the one gateway's name.
	if f.heapPerGateway {
		gwMax("heap_mb", func(s *sample) float64 { return s.GatewayHeap() / (1 << 20) })
	} else {
		gwMax("heap_sum_mb", func(s *sample) float64 { return s.HeapBytes / (1 << 20) })
	}
	gwMax("goroutines", func(s *sample) float64 { return s.Goroutines })
	// RSS is read by the lab from /proc, whatever the scrape did; a dead
	// gateway reads 0 and shows as 0. rss_mb is one gateway's (the
	// largest's), what the per-gateway memory limit applies to;
	// rss_sum_mb is the gateways' sum, kept for runs with several (or an
	// unknown number of) gateways. A run recorded before the largest
	// gateway's RSS was kept has only the sum: with several gateways its
	// rss_mb is a gap, never the sum under a per-gateway name.
	if f.rssPerGateway {
		rss := f.get("rss_mb")
		for j := range b.s {
			rss[i] = math.Max(nz(rss[i]), b.s[j].GatewayRSS()/(1<<20))
		}
	}
	if f.gateways != 1 {
		sum := f.get("rss_sum_mb")
		for j := range b.s {
			sum[i] = math.Max(nz(sum[i]), b.s[j].RSSBytes/(1<<20))
		}
	}
}

// addMeans sets interval i's gauges: time-weighted means (gateway ones over
// the ticks with a current scrape).
func (f *frame) addMeans(i int, b bucket) {
	mean := func(key string, gw bool, v func(*sample) float64) {
		var sum, w float64
		lo, hi := math.Inf(1), math.Inf(-1)
		for j := range b.s {
			if gw && b.s[j].GatewayStale {
				continue
			}
			// The capacity is drawn where it was measured: a tick whose
			// capacity is partly the nodes' configured service time
			// (capacity_configured_rps) is left out, a gap when all are.
			if key == "capacity" && b.s[j].CapacityConfiguredRPS > 0 {
				continue
			}
			wj, x := max(b.w[j], 1e-9), v(&b.s[j])
			sum += x * wj
			w += wj
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		if w > 0 {
			// Within the values averaged, as a mean is: rounding in the
			// weighted sum drew ten nodes up as 10.000000000000002, over
			// the nodes chart's top.
			f.get(key)[i] = min(max(sum/w, lo), hi)
		} else {
			f.get(key)
		}
	}
	mean("capacity", false, func(s *sample) float64 { return s.CapacityRPS })
	mean("queue_depth", true, func(s *sample) float64 { return s.QueueDepth })
	mean("inflight", true, func(s *sample) float64 { return s.Inflight })
	mean("concurrency_limit", true, func(s *sample) float64 { return s.ConcurrencyLimit })
	mean("live_slots", false, func(s *sample) float64 { return nodesUp(s, true) })
	mean("nodes_up", false, func(s *sample) float64 { return nodesUp(s, false) })
	mean("nodes_ejected", true, nodesEjected)
	mean("retries", true, func(s *sample) float64 { return s.RetryRPS })
	mean("hedges", true, func(s *sample) float64 { return s.HedgeRPS })
	for _, p := range priorityNames {
		mean("shed_prio."+p, true, func(s *sample) float64 { return s.ShedRPSByPriority[p] })
	}
	mean("redis_fallback", true, func(s *sample) float64 { return s.RedisFallbackRPS })
}

// nodesUp counts the nodes up in s, or their slots.
func nodesUp(s *sample, slots bool) float64 {
	t := 0.0
	for _, nd := range s.Nodes {
		switch {
		case !nd.Up:
		case slots:
			t += nd.Slots
		default:
			t++
		}
	}
	return t
}

// nodesEjected counts the nodes a gateway holds out of rotation in s
// (ejected, or probing on the way back).
func nodesEjected(s *sample) float64 {
	t := 0.0
	for _, nd := range s.Nodes {
		if nd.Ejection == wire.EjectionEjected || nd.Ejection == wire.EjectionProbing {
			t++
		}
	}
	return t
}

// deltaPrio is a priority counter's change over the bucket.
func deltaPrio(b bucket, p string, c func(prioritySample) uint64) float64 {
	last := b.s[len(b.s)-1]
	var from uint64
	if b.prev != nil {
		from = c(b.prev.ByPriority[p])
	}
	to := c(last.ByPriority[p])
	if to < from {
		return 0
	}
	return float64(to - from)
}

// nz is v, or 0 for NaN.
func nz(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
