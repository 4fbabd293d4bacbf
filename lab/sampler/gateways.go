package sampler

import (
	"math"
	"strings"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/scrape"
)

// gatewayState is one gateway's previous scrape and the shed rates derived
// from its last two scrapes, carried over to ticks that got no new scrape.
type gatewayState struct {
	prev          scrape.Families
	prevAt        time.Time
	starts        int
	byReason      map[string]float64
	byPriority    map[string]float64
	redisFallback float64 // levee_ratelimit_store_fallback_total per second
	retries       float64 // retries sent per second
	hedges        float64 // hedged attempts sent per second
	admitted      float64 // requests admitted per second
}

// addGateways fills the gateways' view: gauges summed, lag and level maxed
// over every gateway with a current scrape; shed, retry and hedge rates
// from counter deltas.
func (st *State) addGateways(smp *runfiles.Sample, in Input) {
	smp.ShedRPSByReason = map[string]float64{}
	smp.ShedRPSByPriority = map[string]float64{}
	level := -1.0
	var defenses map[string]bool
	for i, c := range in.Gateways {
		g := &st.gateways[i]
		if c.Starts != g.starts { // a new process counts from zero
			*g = gatewayState{starts: c.Starts, byReason: g.byReason, byPriority: g.byPriority}
		}
		f := c.Scrape
		if f == nil {
			smp.GatewayStale = true
			continue
		}
		if v, ok := f.Max(wire.MetricOverloadLevel, nil); ok {
			level = math.Max(level, v)
		}
		addGauges(smp, f)
		if defenses == nil && f.Has(wire.MetricDefenseEnabled) {
			defenses = map[string]bool{}
			for k, v := range f.ByLabel(wire.MetricDefenseEnabled, wire.LabelDefense) {
				defenses[k] = v > 0
			}
		}
		var byLevel, byResult map[string]float64
		if rateDue(c.At, g.prevAt, in.Tick) { // a new scrape, far enough on: new rates
			prev, _ := sinceLast(g.prev, g.prevAt, f, c.At, c.Started)
			byLevel, byResult = agentDeltas(f, prev)
			shed, admitted, fallbacks := g.update(f, c.At, c.Started)
			st.shed += shed
			st.admitted += admitted
			st.fallbacks += fallbacks
		}
		addAgentGateway(smp, f, byLevel, byResult)
		for k, v := range g.byReason {
			smp.ShedRPSByReason[k] += v
		}
		for k, v := range g.byPriority {
			smp.ShedRPSByPriority[k] += v
		}
		smp.RedisFallbackRPS += g.redisFallback
		smp.RetryRPS += g.retries
		smp.HedgeRPS += g.hedges
		smp.AdmittedRPS += g.admitted
	}
	smp.AdmittedTotal = st.admitted
	if level >= 0 {
		smp.Level = wire.LevelName(int(level))
	}
	if defenses == nil {
		defenses = make(map[string]bool, len(in.Defenses))
		for k, v := range in.Defenses {
			defenses[k] = v
		}
	}
	smp.Defenses = defenses
}

// addGauges adds one gateway's gauges to the sample (lag quantiles are the
// worst gateway's, the others are summed; the heap is summed and its
// largest gateway's kept too, HeapMaxBytes), and its upstream attempts
// counter as scraped (the summary takes its increase).
func addGauges(smp *runfiles.Sample, f scrape.Families) {
	if v, ok := f.Value(wire.MetricLagProbeP99, nil); ok {
		smp.LagProbeP99Ms = math.Max(smp.LagProbeP99Ms, v*1000)
	}
	if v, ok := f.Value(wire.MetricSchedLatencyP99, nil); ok {
		smp.SchedLatencyP99Ms = math.Max(smp.SchedLatencyP99Ms, v*1000)
	}
	if v, ok := f.Value(wire.MetricGCPauseP99, nil); ok {
		smp.GCPauseP99Ms = math.Max(smp.GCPauseP99Ms, v*1000)
	}
	heap := f.Sum(wire.MetricHeap, nil)
	smp.HeapBytes += heap
	smp.HeapMaxBytes = math.Max(smp.HeapMaxBytes, heap)
	smp.Goroutines += f.Sum(wire.MetricGoGoroutines, nil)
	smp.Inflight += f.Sum(wire.MetricInflight, nil)
	smp.QueueDepth += f.Sum(wire.MetricQueueDepth, nil)
	smp.ConcurrencyLimit += f.Sum(wire.MetricConcurrencyLimit, map[string]string{wire.LabelClass: wire.ClassAI})
	smp.TokensInflight += f.Sum(wire.MetricTokensInflight, nil)
	smp.UpstreamAttemptsTotal += f.Sum(wire.MetricUpstreamAttempts, nil)
}

// markEjections sets each node's Ejection from the gateways' current
// scrapes (their levee_upstream_ejection_state, labelled with the node's
// base URL): the most severe state any of them reports.
func markEjections(smp *runfiles.Sample, gateways []Child) {
	worst := map[string]int{}
	for _, c := range gateways {
		if c.Scrape == nil {
			continue
		}
		for node, v := range c.Scrape.ByLabel(wire.MetricUpstreamEjectionState, wire.LabelNode) {
			addr := strings.TrimPrefix(strings.TrimPrefix(node, "http://"), "https://")
			if w, ok := worst[addr]; !ok || int(v) > w {
				worst[addr] = int(v)
			}
		}
	}
	states := wire.EjectionStates()
	for i := range smp.Nodes {
		if v, ok := worst[smp.Nodes[i].Addr]; ok && v >= 0 && v < len(states) {
			smp.Nodes[i].Ejection = states[v]
		}
	}
}

// update takes a new scrape f taken at at (of a process started at
// started, zero when unknown): the shed, admission, retry and
// hedge rates since the previous scrape (see sinceLast), and the increases
// of the shed, admitted and rate-limit store fallback counters, which it
// returns.
func (g *gatewayState) update(f scrape.Families, at, started time.Time) (shed, admitted, fallbacks float64) {
	prev, since := sinceLast(g.prev, g.prevAt, f, at, started)
	g.byReason, g.byPriority = map[string]float64{}, map[string]float64{}
	if since > 0 {
		for k, v := range f.ByLabelDelta(prev, wire.MetricShed, wire.LabelReason, nil) {
			g.byReason[k] = v / since
		}
		for k, v := range f.ByLabelDelta(prev, wire.MetricShed, wire.LabelPriority, nil) {
			g.byPriority[k] = v / since
		}
		g.redisFallback = f.SumDelta(prev, wire.MetricRateLimitStoreFallback, nil) / since
		g.retries = f.SumDelta(prev, wire.MetricRetries, map[string]string{wire.LabelResult: wire.RetrySent}) / since
		g.hedges = f.SumDelta(prev, wire.MetricUpstreamHedges, map[string]string{wire.LabelResult: wire.HedgeSent}) / since
	}
	admitted = f.SumDelta(prev, wire.MetricAdmitted, nil)
	g.admitted = 0
	if since > 0 {
		g.admitted = admitted / since
	}
	g.prev, g.prevAt = f, at
	return f.SumDelta(prev, wire.MetricShed, nil), admitted, f.SumDelta(prev, wire.MetricRateLimitStoreFallback, nil)
}

// rateDue reports whether a scrape taken at at gives new rates against
// the one taken at prevAt (zero: none yet): it is newer, by at least half
// a tick. A scrape slower than a tick is followed at once by the next
// (the ticker keeps one tick pending), and counters over those few
// milliseconds read as a dip to 0 (seen as the admitted line's one-tick
// drops); the rates then stay those of the last interval until one long
// enough, whose deltas hold everything since.
func rateDue(at, prevAt time.Time, tick time.Duration) bool {
	return at.After(prevAt) && (prevAt.IsZero() || at.Sub(prevAt) >= tick/2)
}

// sinceLast is the scrape a new one f (taken at at) is compared with — the
// previous one, or an empty one for a new process — and the seconds between
// them. A new process's counters count from its start, so their first
// increase spans the time since it started, however many ticks went by
// before the first scrape; dividing it by one tick made a restarted
// gateway's first rates peak at many times the truth. The start is
// started, when the supervisor knows it, else the process's
// process_start_time_seconds (up to a second early: it is based on the
// boot time in whole seconds, which read a first rate at under half the
// truth). Without either the first scrape is only a baseline: since is 0
// and there is no rate yet.
func sinceLast(prev scrape.Families, prevAt time.Time, f scrape.Families, at, started time.Time) (scrape.Families, float64) {
	if prev == nil {
		prev = scrape.Families{}
	}
	if prevAt.IsZero() {
		if started.IsZero() {
			start, ok := f.Value(wire.MetricProcessStart, nil)
			if !ok || start <= 0 {
				return prev, 0
			}
			started = time.Unix(0, int64(start*1e9))
		}
		return prev, max(at.Sub(started).Seconds(), 0)
	}
	return prev, at.Sub(prevAt).Seconds()
}
