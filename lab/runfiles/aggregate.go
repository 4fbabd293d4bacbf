package runfiles

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/load"
)

// digest is what the aggregator keeps of one Sample.
type digest struct {
	elapsed float64
	dt      float64
	// second is the second of the load's clock (Sample.Elapsed) the
	// tick's window falls in (see tickSecond): the goodput ratio's bucket;
	// mid is the window's middle on that clock (tickMid).
	second    float64
	mid       float64
	offered   float64 // arrivals in the tick
	ok        float64 // outcome ok in the tick
	capacity  float64 // req/s
	limit     float64
	liveSlots float64
	p0Offered uint64
	p0OK      uint64
	p0Fin     uint64 // P0 requests finished (any outcome) since the start
	rss       float64
	attempts  float64 // gateways' upstream attempts since they started
	// prio is each priority's offered and passed-the-rate-limit totals.
	prio map[string]prioTotals
}

// prioTotals are one priority's cumulative counts at a tick.
type prioTotals struct{ offered, passed, reference uint64 }

// Aggregator folds the Samples of one recording into what Summary needs
// beyond the generator's totals. Safe for concurrent use.
type Aggregator struct {
	mu sync.Mutex
	// guarded by mu:
	started        time.Time
	digests        []digest
	lag, sched     float64
	heap, gor, rss float64
	oomKills       int
	measuredSum    float64 // Σ completions/s over saturated ticks
	measuredN      int
	targetIntegral float64 // requests asked of the generator (Σ rate × dt)
	lastRate       float64
	lastRateAt     time.Time
	faults         []faultWindow
	// p0Fin0, p0OK0 are the P0 requests finished and ok since the lab's
	// start when the recording started (Base); 0 for one from the start.
	p0Fin0, p0OK0 uint64
	failovers     []RedisFailover
	agent         agentAgg
	// prevElapsed is the last sample's Sample.Elapsed; havePrev whether
	// there was one.
	prevElapsed float64
	havePrev    bool
	// origin is where the recording started on the load's clock
	// (Sample.Elapsed − the sample's time since started, from the first
	// sample): 0 for a recording from the start, up to the rounding of
	// Elapsed.
	origin float64
}

// NewAggregator returns an aggregator for a recording that starts at start
// with the generator's target at rate.
func NewAggregator(start time.Time, rate float64) *Aggregator {
	return &Aggregator{started: start, lastRate: rate, lastRateAt: start}
}

// Base sets the P0 requests finished (any outcome) and ok since the lab
// started, as of the recording's start: a recording started while the lab
// ran judges a fault active at its start on the P0 requests that finished
// inside it, not on every one since the lab began. A recording from the
// start needs no Base (they count from 0).
func (a *Aggregator) Base(p0Finished, p0OK uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.p0Fin0, a.p0OK0 = p0Finished, p0OK
}

// Rate records that the generator's target became r at t.
func (a *Aggregator) Rate(t time.Time, r float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.After(a.lastRateAt) {
		a.targetIntegral += a.lastRate * t.Sub(a.lastRateAt).Seconds()
		a.lastRateAt = t
	}
	a.lastRate = r
}

// targetUntil is the target integral up to t.
func (a *Aggregator) targetUntil(t time.Time) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	v := a.targetIntegral
	if t.After(a.lastRateAt) {
		v += a.lastRate * t.Sub(a.lastRateAt).Seconds()
	}
	return v
}

func (a *Aggregator) elapsed(t time.Time) float64 { return t.Sub(a.started).Seconds() }

// FaultApplied records that the fault called name was applied at t. An
// apply while the fault's window is open joins it (see faultApplied).
func (a *Aggregator) FaultApplied(name string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults = faultApplied(a.faults, name, a.elapsed(t))
}

// FaultReverted records that the fault called name was reverted at t. A
// revert with no window open is of a fault active since the recording
// began, or a repeat (see faultReverted).
func (a *Aggregator) FaultReverted(name string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults = faultReverted(a.faults, name, a.elapsed(t), 0)
}

// RedisFailover records a cluster master lost (and replaced) at t, the
// kill's time.
func (a *Aggregator) RedisFailover(f RedisFailover, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f.AtS = round(a.elapsed(t), 3)
	a.failovers = append(a.failovers, f)
}

// Add folds one sample; dt is the length of the generator's window its
// rates were counted over (Sample.WindowS), completions the nodes'
// completion rate this tick, saturated whether every live node had every
// slot busy, and p0Finished the P0 requests finished so far (any outcome).
func (a *Aggregator) Add(s Sample, dt float64, completions float64, saturated bool, p0Finished uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.havePrev {
		a.origin = s.Elapsed - a.elapsed(s.Time)
	}
	mid := tickMid(a.prevElapsed, a.havePrev, s.Elapsed, dt)
	d := digest{
		elapsed:  a.elapsed(s.Time),
		dt:       dt,
		second:   math.Floor(mid),
		mid:      mid,
		offered:  s.OfferedRPS * dt,
		ok:       s.GoodputRPS * dt,
		capacity: s.CapacityRPS,
		limit:    s.ConcurrencyLimit,
		rss:      s.GatewayRSS(),
		p0Fin:    p0Finished,
		attempts: s.UpstreamAttemptsTotal,
	}
	for _, n := range s.Nodes {
		if n.Up {
			d.liveSlots += n.Slots
		}
	}
	if p, ok := s.ByPriority[wire.PriorityP0]; ok {
		d.p0Offered, d.p0OK = p.OfferedTotal, p.OKTotal
	}
	d.prio = make(map[string]prioTotals, len(s.ByPriority))
	for name, p := range s.ByPriority {
		d.prio[name] = prioTotals{offered: p.OfferedTotal, passed: p.PassedRateLimitTotal, reference: p.ReferencePassedTotal}
	}
	a.digests = append(a.digests, d)
	a.prevElapsed, a.havePrev = s.Elapsed, true
	a.lag = math.Max(a.lag, s.LagProbeP99Ms)
	a.sched = math.Max(a.sched, s.SchedLatencyP99Ms)
	a.heap = math.Max(a.heap, s.GatewayHeap())
	a.gor = math.Max(a.gor, s.Goroutines)
	a.rss = math.Max(a.rss, s.GatewayRSS())
	a.oomKills = s.OOMKills
	a.agent.add(s.Agent)
	if saturated {
		a.measuredSum += completions
		a.measuredN++
	}
}

// SummaryInput is everything Summarize needs besides the aggregated samples.
type SummaryInput struct {
	Exp         *experiment.Experiment
	Quick       bool
	Totals      load.Totals // for this recording (a delta when it started late)
	GatewayShed uint64      // the gateways' shed counters over the recording
	ShedExact   bool        // no gateway restarted: GatewayShed lost nothing
	// LiveShed, when set, is the shed check of a recording started while
	// the lab ran (see ShedCheck); GatewayShed and ShedExact are then unused.
	LiveShed *ShedCheck
	OOMKills int // during this recording
	Restarts int
	End      time.Time
	Ended    string // Summary.Ended
	// Redis is the Redis in use and its fallbacks over the recording;
	// Summarize adds the failovers recorded.
	Redis RedisSummary
	// FaultStepErrors are the fault steps that failed during the recording
	// (Summary.FaultStepErrors).
	FaultStepErrors []string
}

// Summarize builds the Summary and evaluates the experiment's thresholds.
func (a *Aggregator) Summarize(in SummaryInput) Summary {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := in.Totals
	s := Summary{
		Name:      in.Exp.Name,
		Title:     in.Exp.Title,
		Started:   a.started,
		DurationS: round(t.Elapsed.Seconds(), 3),
		Quick:     in.Quick,
		Ended:     in.Ended,
		Offered:   t.Offered,
	}
	s.addOutcomes(t)
	s.Agent = a.agent.summary(t)
	a.addRates(&s, t)
	a.addCapacity(&s, t)
	a.addAttempts(&s, t)
	s.Gateway = GatewaySummary{
		LagP99Ms:          round(a.lag, 3),
		SchedLatencyP99Ms: round(a.sched, 3),
		MaxHeapBytes:      a.heap,
		MaxGoroutines:     a.gor,
		MaxRSSBytes:       a.rss,
		RSSGrowthMB:       round(a.rssGrowth()/(1<<20), 3),
		OOMKills:          in.OOMKills,
		Restarts:          in.Restarts,
	}
	if in.LiveShed != nil {
		s.ShedCheck = *in.LiveShed
	} else {
		// The gateway counts every shed attempt; the clients retried some.
		s.ShedCheck = NewShedCheck(in.GatewayShed, s.ShedCheck.Client+t.ShedRetried, t.Outcomes[wire.OutcomeTimeout.String()], in.ShedExact)
	}
	endS := a.elapsed(in.End)
	for _, f := range a.faults {
		s.Faults = append(s.Faults, a.faultSummary(f, endS, in.Exp.ClientTimeout.D().Seconds()))
	}
	// A window of a fault active since the recording began is opened by
	// its revert, after windows that start later.
	slices.SortStableFunc(s.Faults, func(x, y FaultSummary) int { return cmp.Compare(x.AtS, y.AtS) })
	s.Redis = in.Redis
	s.Redis.Fallbacks = math.Round(s.Redis.Fallbacks)
	if s.Redis.Kind == "" {
		s.Redis.Kind = experiment.RedisOff
	}
	s.Redis.Failovers = append([]RedisFailover(nil), a.failovers...)
	s.RateLimit = a.globalLimits(in.Exp.GlobalLimits())
	s.Recovery = a.recovery(endS)
	s.ClientAttempts, s.ClientRetries, s.ClientRetriesDenied = t.Attempts, t.Retries, t.RetriesDenied
	s.evaluate(in.Exp.ParsedThresholds())
	s.FaultStepErrors = slices.Clone(in.FaultStepErrors)
	s.Pass = s.Pass && len(s.FaultStepErrors) == 0
	return s
}

// addOutcomes fills the outcome counts, overall and per priority, the
// sheds by reason and the client side of the shed check.
func (s *Summary) addOutcomes(t load.Totals) {
	s.ShedCheck.Client = s.setOutcomes(t.Outcomes)
	s.ByPriority = map[string]PrioritySummary{}
	for _, p := range load.Priorities {
		pt := t.ByPriority[p]
		ps := PrioritySummary{Offered: pt.Offered, OK: pt.Outcomes[wire.OutcomeOK.String()], SuccessRate: 1, Outcomes: map[string]uint64{}}
		for _, o := range load.Outcomes {
			ps.Outcomes[o] = pt.Outcomes[o]
		}
		if pt.Offered > 0 {
			ps.SuccessRate = round(float64(ps.OK)/float64(pt.Offered), 6)
		}
		ps.P50Ms, ps.P99Ms = histMs(pt.Latency, 50), histMs(pt.Latency, 99)
		s.ByPriority[p] = ps
	}
	s.AdmittedP50Ms, s.AdmittedP99Ms = histMs(t.Admitted, 50), histMs(t.Admitted, 99)
}

// addRates fills the achieved, goodput and target rates; mu held.
func (a *Aggregator) addRates(s *Summary, t load.Totals) {
	dur := t.Elapsed.Seconds()
	if dur <= 0 {
		return
	}
	s.AchievedRPS = round(float64(t.Offered)/dur, 3)
	s.GoodputRPS = round(float64(t.Outcomes[wire.OutcomeOK.String()])/dur, 3)
	target := a.targetIntegralUntil(a.started.Add(t.Elapsed))
	s.TargetRPS = round(target/dur, 3)
	if target > 0 {
		s.AchievedRateError = round(math.Abs(float64(t.Offered)-target)/target, 6)
	}
}

// addCapacity fills the capacity figures and the goodput ratio; mu held.
func (a *Aggregator) addCapacity(s *Summary, t load.Totals) {
	s.CapacityRPS, s.GoodputRatio = capacityAndRatio(a.digests, float64(t.Outcomes[wire.OutcomeOK.String()]))
	if a.measuredN > 0 {
		s.CapacityMeasuredRPS = round(a.measuredSum/float64(a.measuredN), 3)
	}
}

// addAttempts fills the upstream attempts over the recording and per
// admitted request; mu held.
func (a *Aggregator) addAttempts(s *Summary, t load.Totals) {
	n := len(a.digests)
	if n == 0 {
		return
	}
	s.UpstreamAttempts = math.Max(0, a.digests[n-1].attempts-a.digests[0].attempts)
	var admitted uint64
	for _, o := range wire.Outcomes() {
		if o.Admitted() {
			admitted += t.Outcomes[o.String()]
		}
	}
	if admitted > 0 {
		s.AttemptsPerAdmitted = round(s.UpstreamAttempts/float64(admitted), 4)
	}
}

// evaluate checks every threshold against the summary.
func (s *Summary) evaluate(ths []experiment.Threshold) {
	s.Thresholds = map[string]ThresholdResult{}
	s.Pass = true
	for _, th := range ths {
		v, note := s.Metric(th.Name)
		r := ThresholdResult{Expr: th.Expr, Value: v, Pass: th.Check(v), Note: note}
		s.Thresholds[th.Name] = r
		s.Pass = s.Pass && r.Pass
	}
}

// rssGrowth implements GatewaySummary.RSSGrowthMB (in bytes), mu held.
func (a *Aggregator) rssGrowth() float64 {
	if len(a.digests) == 0 {
		return 0
	}
	split := a.digests[len(a.digests)-1].elapsed / 4
	if len(a.faults) > 0 {
		split = a.faults[0].start
		for _, f := range a.faults {
			split = math.Min(split, f.start)
		}
	}
	var before, after float64
	for _, d := range a.digests {
		if d.elapsed < split {
			before = math.Max(before, d.rss)
		} else {
			after = math.Max(after, d.rss)
		}
	}
	if before == 0 {
		return 0
	}
	return math.Max(0, after-before)
}

// targetIntegralUntil is targetUntil with mu held.
func (a *Aggregator) targetIntegralUntil(t time.Time) float64 {
	v := a.targetIntegral
	if t.After(a.lastRateAt) {
		v += a.lastRate * t.Sub(a.lastRateAt).Seconds()
	}
	return v
}

// liveAfterKill is the fewest live slots seen in the fault window (the
// kill shows a tick or so after it happens), ignoring ticks where no node
// answered its scrape; 0 when no node was up at all, where a limit has
// nothing to settle to.
func (a *Aggregator) liveAfterKill(in []digest) float64 {
	low := math.Inf(1)
	for _, d := range in {
		if d.liveSlots > 0 {
			low = math.Min(low, d.liveSlots)
		}
	}
	if math.IsInf(low, 1) {
		return 0
	}
	return low
}

// settleWindow is the span of the trailing median of the limit (seconds).
const settleWindow = 3.0

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// settleBand is how close the concurrency limit must come to the live slots.
const settleBand = 0.15

func (a *Aggregator) faultSummary(f faultWindow, endS, clientTimeout float64) FaultSummary {
	end := f.end
	if end < 0 {
		end = endS
	}
	fs := FaultSummary{Fault: f.name, AtS: round(f.start, 3), EndS: round(end, 3)}
	var in []digest
	var before, after *digest
	for i := range a.digests {
		d := a.digests[i]
		switch {
		case d.elapsed < f.start:
			before = &a.digests[i]
		case d.elapsed <= end:
			in = append(in, d)
		}
		if d.elapsed <= end+clientTimeout {
			after = &a.digests[i]
		}
	}
	if after != nil {
		fin0, ok0 := a.p0Fin0, a.p0OK0
		if before != nil {
			fin0, ok0 = before.p0Fin, before.p0OK
		}
		if after.p0Fin > fin0 {
			v := round(float64(after.p0OK-ok0)/float64(after.p0Fin-fin0), 6)
			fs.P0SuccessRate = &v
		}
	}
	if chaos.Default.Effect(f.name) == chaos.EffectNodeLoss && len(in) > 0 && a.liveAfterKill(in) > 0 {
		fs.LiveSlots = a.liveAfterKill(in)
		// The limit is judged by its trailing median over settleWindow, so
		// that a limiter's short baseline probes and per-tick noise do not
		// count as unsettled.
		settled := -1.0
		for i, d := range in {
			var win []float64
			for j := i; j >= 0 && d.elapsed-in[j].elapsed < settleWindow; j-- {
				win = append(win, in[j].limit)
			}
			lim := median(win)
			inBand := fs.LiveSlots > 0 && math.Abs(lim-fs.LiveSlots) <= settleBand*fs.LiveSlots
			if !inBand {
				settled = -1
			} else if settled < 0 {
				settled = d.elapsed
			}
		}
		if settled >= 0 {
			fs.Settled = true
			fs.LimitSettleS = round(settled-f.start, 3)
		} else {
			fs.LimitSettleS = round(end-f.start, 3)
		}
	}
	return fs
}
