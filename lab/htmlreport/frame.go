package htmlreport

import (
	"math"
	"strings"
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
	// badHist counts histograms that did not decode.
	badHist int
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
//   - other gauges (queue, in-flight, limit, slots, capacity, nodes up,
//     gateway shed and fallback rates): time-weighted means.
//
// Gateway values of a tick without a current scrape (GatewayStale) are
// left out; an interval with none is a gap, never a zero.
func computeFrame(r *Run, tl timeline, iv float64) frame {
	bs := tl.buckets(r.Samples, iv)
	n := len(bs)
	f := frame{x: make(values, n), series: map[string]values{}}
	get := func(key string) values {
		v, ok := f.series[key]
		if !ok {
			v = nan(n)
			f.series[key] = v
		}
		return v
	}
	for _, s := range r.Samples {
		if s.AdmittedHist != "" || s.ByPriority["P0"].Hist != "" {
			f.hasHist = true
			break
		}
	}
	for _, s := range r.Samples {
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
		last := &b.s[len(b.s)-1]
		// Counters.
		if b.dt > 0 {
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
			outcome := func(o string) func(*sample) uint64 {
				return func(s *sample) uint64 { return s.OutcomeTotal[o] }
			}
			get("offered")[i] = delta(func(s *sample) uint64 { return s.OfferedTotal }) / b.dt
			get("goodput")[i] = delta(outcome(outcomeOK)) / b.dt
			get("admitted")[i] = (delta(outcome(outcomeOK)) + delta(outcome(outcomeFallback)) +
				delta(outcome(outcomeTimeout)) + delta(outcome(outcomeError))) / b.dt
			for _, o := range outcomeNames {
				if reason, ok := strings.CutPrefix(o, "shed_"); ok {
					get("shed." + reason)[i] = delta(outcome(o)) / b.dt
				}
			}
			for _, o := range failureOutcomes {
				get("failed." + o)[i] = delta(outcome(o)) / b.dt
			}
		}
		for _, p := range priorityNames {
			out := get("success." + p)
			if f.hasFinished {
				fin := deltaPrio(b, p, func(ps prioritySample) uint64 { return ps.FinishedTotal })
				ok := deltaPrio(b, p, func(ps prioritySample) uint64 { return ps.OKTotal })
				if fin > 0 {
					out[i] = 100 * ok / fin
				}
			} else if ps, ok := last.ByPriority[p]; ok && ps.OfferedTotal > 0 {
				out[i] = 100 * ps.SuccessRate // an older run: the sampler's trailing window
			}
		}
		// Latency: merge the interval's histograms.
		if f.hasHist {
			m.reset()
			for _, s := range b.s {
				m.add(s.AdmittedHist)
			}
			get("latency.admitted_p50")[i] = m.ms(50)
			get("latency.admitted_p99")[i] = m.ms(99)
			m.reset()
			for _, s := range b.s {
				m.add(s.ByPriority["P0"].Hist)
			}
			get("latency.p0_p99")[i] = m.ms(99)
		}
		// Gateway gauges and percentiles.
		gwMax := func(key string, v func(*sample) float64) {
			out := get(key)
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
		gwMax("heap_mb", func(s *sample) float64 { return s.HeapBytes / (1 << 20) })
		gwMax("goroutines", func(s *sample) float64 { return s.Goroutines })
		// RSS is read by the lab from /proc, whatever the scrape did; a dead
		// gateway reads 0 and shows as 0.
		rss := get("rss_mb")
		for j := range b.s {
			rss[i] = math.Max(nz(rss[i]), b.s[j].RSSBytes/(1<<20))
		}
		mean := func(key string, gw bool, v func(*sample) float64) {
			var sum, w float64
			for j := range b.s {
				if gw && b.s[j].GatewayStale {
					continue
				}
				wj := b.w[j]
				if wj <= 0 {
					wj = 1e-9
				}
				sum += v(&b.s[j]) * wj
				w += wj
			}
			out := get(key)
			if w > 0 {
				out[i] = sum / w
			}
		}
		mean("capacity", false, func(s *sample) float64 { return s.CapacityRPS })
		mean("queue_depth", true, func(s *sample) float64 { return s.QueueDepth })
		mean("inflight", true, func(s *sample) float64 { return s.Inflight })
		mean("concurrency_limit", true, func(s *sample) float64 { return s.ConcurrencyLimit })
		mean("live_slots", false, func(s *sample) float64 {
			t := 0.0
			for _, nd := range s.Nodes {
				if nd.Up {
					t += nd.Slots
				}
			}
			return t
		})
		mean("nodes_up", false, func(s *sample) float64 {
			t := 0.0
			for _, nd := range s.Nodes {
				if nd.Up {
					t++
				}
			}
			return t
		})
		for _, p := range priorityNames {
			mean("shed_prio."+p, true, func(s *sample) float64 { return s.ShedRPSByPriority[p] })
		}
		mean("redis_fallback", true, func(s *sample) float64 { return s.RedisFallbackRPS })
	}
	f.badHist = m.bad
	return f
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
