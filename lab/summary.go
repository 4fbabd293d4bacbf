package lab

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/lab/load"
)

// Summary is summary.json: the outcome of one run (or one recording). The
// JSON names are fixed: other checks read them.
type Summary struct {
	Name      string    `json:"name"`
	Title     string    `json:"title"`
	Started   time.Time `json:"started"`
	DurationS float64   `json:"duration_s"` // load scheduling time
	Quick     bool      `json:"quick"`
	// Ended says how the recording ended: "done" (the experiment ran its
	// course), "stopped" (Stop or a signal ended it early) or "recording
	// stopped" (a dashboard recording).
	Ended string `json:"ended"`

	Offered uint64 `json:"offered"`
	// Outcomes has every outcome name (lab.Outcomes), zeros included.
	Outcomes map[string]uint64 `json:"outcomes"`
	// Unaccounted is offered minus the sum of outcomes: 0 for a finished
	// `levee run`. A dashboard recording started or stopped while requests
	// were in flight may differ by those requests.
	Unaccounted int64                      `json:"unaccounted"`
	ByPriority  map[string]PrioritySummary `json:"by_priority"`

	TargetRPS   float64 `json:"target_rps"`   // mean target asked of the generator
	AchievedRPS float64 `json:"achieved_rps"` // offered / duration
	GoodputRPS  float64 `json:"goodput_rps"`  // ok / duration
	// CapacityRPS is the mean over the run of live nodes × slots / mean
	// service time: the nodes' configured slots, and their configured mean
	// service time until enough requests finished to use the observed one
	// (a mix with streams holds slots longer than the configured latency).
	CapacityRPS float64 `json:"capacity_rps"`
	// CapacityMeasuredRPS is the nodes' mean completion rate over ticks
	// when every live node had all its slots busy; 0 when that never
	// happened.
	CapacityMeasuredRPS float64 `json:"capacity_measured_rps"`
	// GoodputRatio is ok over what the nodes could have served well:
	// Σ over 1 s buckets of min(offered, capacity × 1 s). At 10× overload
	// that is goodput / capacity; below capacity it is ok / offered. Requests
	// offered near the end and answered after load stopped count as ok, so
	// a fully served run can read slightly above 1.
	GoodputRatio      float64        `json:"goodput_ratio"`
	AdmittedP50Ms     float64        `json:"admitted_p50_ms"`
	AdmittedP99Ms     float64        `json:"admitted_p99_ms"`
	Gateway           GatewaySummary `json:"gateway"`
	AchievedRateError float64        `json:"achieved_rate_error"`
	// ShedByReason is the client-observed sheds by reason (ratelimit, …).
	ShedByReason map[string]uint64 `json:"shed_by_reason"`
	ShedCheck    ShedCheck         `json:"shed_check"`
	// Faults has one entry per fault application, in time order.
	Faults []FaultSummary `json:"faults,omitempty"`

	// UpstreamAttempts is how many attempts the gateways sent to nodes from
	// the first sample on (first tries, retries, hedges; a gateway restart
	// loses its count), and AttemptsPerAdmitted that over the admitted
	// requests (ok, fallback, timeout, error).
	UpstreamAttempts    float64 `json:"upstream_attempts"`
	AttemptsPerAdmitted float64 `json:"attempts_per_admitted"`

	Thresholds map[string]ThresholdResult `json:"thresholds"`
	// Pass is true when every threshold passed.
	Pass bool `json:"pass"`
}

// PrioritySummary is one priority class.
type PrioritySummary struct {
	Offered     uint64  `json:"offered"`
	OK          uint64  `json:"ok"`
	SuccessRate float64 `json:"success_rate"` // ok / offered; 1 when nothing was offered
	P50Ms       float64 `json:"p50_ms"`       // latency of sent requests, any outcome
	P99Ms       float64 `json:"p99_ms"`
	// Outcomes counts this priority's requests by outcome (every name in
	// lab.Outcomes, zeros included), so a success rate below 1 shows what
	// the failed requests got: fallback, error, timeout or a shed.
	Outcomes map[string]uint64 `json:"outcomes,omitempty"`
}

// GatewaySummary is the worst the gateways went through.
type GatewaySummary struct {
	LagP99Ms          float64 `json:"lag_p99_ms"`           // max over ticks of the probe's recent p99
	SchedLatencyP99Ms float64 `json:"sched_latency_p99_ms"` // max over ticks of the runtime's recent p99
	MaxHeapBytes      float64 `json:"max_heap_bytes"`
	MaxGoroutines     float64 `json:"max_goroutines"`
	MaxRSSBytes       float64 `json:"max_rss_bytes"`
	// RSSGrowthMB is how far RSS rose above its steady state: the largest
	// RSS from the first fault on minus the largest before it (without
	// faults: after the first quarter of the run minus within it).
	RSSGrowthMB float64 `json:"rss_growth_mb"`
	OOMKills    int     `json:"oom_kills"`
	Restarts    int     `json:"restarts"` // gateway restarts for any reason
}

// ShedCheck compares the gateways' levee_shed_total with the sheds the
// client saw. Exact is false when a gateway restarted during the run (its
// counters since the last scrape before the kill are lost).
type ShedCheck struct {
	Gateway  uint64 `json:"gateway"`
	Client   uint64 `json:"client"`
	Mismatch uint64 `json:"mismatch"`
	Exact    bool   `json:"exact"`
}

// FaultSummary is one fault application.
type FaultSummary struct {
	Fault string  `json:"fault"`
	AtS   float64 `json:"at_s"`
	EndS  float64 `json:"end_s"` // revert time, or the end of the run
	// P0SuccessRate is P0 ok / P0 finished over [at, end + client timeout]
	// (requests offered during the fault finish up to a timeout later).
	P0SuccessRate float64 `json:"p0_success_rate"`
	// For node_kill: the live slots after the kill, and when the trailing
	// 3 s median of the gateways' summed concurrency limit entered ±15 % of
	// them for good (until the fault ended).
	LiveSlots    float64 `json:"live_slots,omitempty"`
	LimitSettleS float64 `json:"limit_settle_s,omitempty"`
	Settled      bool    `json:"settled,omitempty"`
}

// digest is what the aggregator keeps of one Sample.
type digest struct {
	elapsed   float64
	dt        float64
	offered   float64 // arrivals in the tick
	capacity  float64 // req/s
	limit     float64
	liveSlots float64
	p0Offered uint64
	p0OK      uint64
	p0Fin     uint64 // P0 requests finished (any outcome) since the start
	rss       float64
	attempts  float64 // gateways' upstream attempts since they started
}

type faultWindow struct {
	name       string
	start, end float64 // elapsed seconds; end < 0 while active
}

// aggregator folds the Samples of one recording into what Summary needs
// beyond the generator's totals. Safe for concurrent use.
type aggregator struct {
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
}

func newAggregator(start time.Time, rate float64) *aggregator {
	return &aggregator{started: start, lastRate: rate, lastRateAt: start}
}

// rate records that the generator's target became r at t.
func (a *aggregator) rate(t time.Time, r float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.After(a.lastRateAt) {
		a.targetIntegral += a.lastRate * t.Sub(a.lastRateAt).Seconds()
		a.lastRateAt = t
	}
	a.lastRate = r
}

// targetUntil is the target integral up to t.
func (a *aggregator) targetUntil(t time.Time) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	v := a.targetIntegral
	if t.After(a.lastRateAt) {
		v += a.lastRate * t.Sub(a.lastRateAt).Seconds()
	}
	return v
}

func (a *aggregator) elapsed(t time.Time) float64 { return t.Sub(a.started).Seconds() }

func (a *aggregator) faultApplied(name string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults = append(a.faults, faultWindow{name: name, start: a.elapsed(t), end: -1})
}

func (a *aggregator) faultReverted(name string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.faults) - 1; i >= 0; i-- {
		if a.faults[i].name == name && a.faults[i].end < 0 {
			a.faults[i].end = a.elapsed(t)
			return
		}
	}
}

// add folds one sample; completions is the nodes' completion rate this tick,
// saturated whether every live node had every slot busy, and p0Finished
// the P0 requests finished so far (any outcome).
func (a *aggregator) add(s Sample, dt float64, completions float64, saturated bool, p0Finished uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d := digest{
		elapsed:  a.elapsed(s.Time),
		dt:       dt,
		offered:  s.OfferedRPS * dt,
		capacity: s.CapacityRPS,
		limit:    s.ConcurrencyLimit,
		rss:      s.RSSBytes,
		p0Fin:    p0Finished,
		attempts: s.UpstreamAttemptsTotal,
	}
	for _, n := range s.Nodes {
		if n.Up {
			d.liveSlots += n.Slots
		}
	}
	if p, ok := s.ByPriority["P0"]; ok {
		d.p0Offered, d.p0OK = p.OfferedTotal, p.OKTotal
	}
	a.digests = append(a.digests, d)
	a.lag = math.Max(a.lag, s.LagProbeP99Ms)
	a.sched = math.Max(a.sched, s.SchedLatencyP99Ms)
	a.heap = math.Max(a.heap, s.HeapBytes)
	a.gor = math.Max(a.gor, s.Goroutines)
	a.rss = math.Max(a.rss, s.RSSBytes)
	a.oomKills = s.OOMKills
	if saturated {
		a.measuredSum += completions
		a.measuredN++
	}
}

// summaryInput is everything Summarize needs besides the aggregator.
type summaryInput struct {
	exp         *Experiment
	quick       bool
	totals      load.Totals // for this recording (a delta when it started late)
	gatewayShed uint64
	shedExact   bool
	oomKills    int // during this recording
	restarts    int
	end         time.Time
	ended       string
}

// summarize builds the Summary and evaluates the experiment's thresholds.
func (a *aggregator) summarize(in summaryInput) Summary {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := in.totals
	dur := t.Elapsed.Seconds()
	s := Summary{
		Name:         in.exp.Name,
		Title:        in.exp.Title,
		Started:      a.started,
		DurationS:    round(dur, 3),
		Quick:        in.quick,
		Ended:        in.ended,
		Offered:      t.Offered,
		Outcomes:     map[string]uint64{},
		ByPriority:   map[string]PrioritySummary{},
		ShedByReason: map[string]uint64{},
	}
	var sum uint64
	for _, o := range Outcomes {
		s.Outcomes[o] = t.Outcomes[o]
		sum += t.Outcomes[o]
		if r, ok := strings.CutPrefix(o, "shed_"); ok {
			s.ShedByReason[r] = t.Outcomes[o]
			s.ShedCheck.Client += t.Outcomes[o]
		}
	}
	s.Unaccounted = int64(t.Offered) - int64(sum)
	for _, p := range Priorities {
		pt := t.ByPriority[p]
		ps := PrioritySummary{Offered: pt.Offered, OK: pt.Outcomes[OutcomeOK], SuccessRate: 1, Outcomes: map[string]uint64{}}
		for _, o := range Outcomes {
			ps.Outcomes[o] = pt.Outcomes[o]
		}
		if pt.Offered > 0 {
			ps.SuccessRate = round(float64(ps.OK)/float64(pt.Offered), 6)
		}
		ps.P50Ms, ps.P99Ms = histMs(pt.Latency, 50), histMs(pt.Latency, 99)
		s.ByPriority[p] = ps
	}
	s.AdmittedP50Ms, s.AdmittedP99Ms = histMs(t.Admitted, 50), histMs(t.Admitted, 99)
	if dur > 0 {
		s.AchievedRPS = round(float64(t.Offered)/dur, 3)
		s.GoodputRPS = round(float64(t.Outcomes[OutcomeOK])/dur, 3)
		end := a.started.Add(t.Elapsed)
		target := a.targetIntegralUntil(end)
		s.TargetRPS = round(target/dur, 3)
		if target > 0 {
			s.AchievedRateError = round(math.Abs(float64(t.Offered)-target)/target, 6)
		}
	}
	// Usable capacity: min(offered, capacity) over ~1 s buckets (per tick,
	// Poisson noise in the offered count would bias the minimum down).
	var capSum, capT, usable float64
	var bOff, bCap, bT float64
	for i, d := range a.digests {
		if d.dt > 0 {
			capSum += d.capacity * d.dt
			capT += d.dt
			bOff += d.offered
			bCap += d.capacity * d.dt
			bT += d.dt
		}
		if bT >= usableBucket || i == len(a.digests)-1 {
			usable += math.Min(bOff, bCap)
			bOff, bCap, bT = 0, 0, 0
		}
	}
	if capT > 0 {
		s.CapacityRPS = round(capSum/capT, 3)
	}
	if usable > 0 {
		s.GoodputRatio = round(float64(t.Outcomes[OutcomeOK])/usable, 6)
	}
	if a.measuredN > 0 {
		s.CapacityMeasuredRPS = round(a.measuredSum/float64(a.measuredN), 3)
	}
	if n := len(a.digests); n > 0 {
		s.UpstreamAttempts = math.Max(0, a.digests[n-1].attempts-a.digests[0].attempts)
		admitted := t.Outcomes[OutcomeOK] + t.Outcomes[OutcomeFallback] + t.Outcomes[OutcomeTimeout] + t.Outcomes[OutcomeError]
		if admitted > 0 {
			s.AttemptsPerAdmitted = round(s.UpstreamAttempts/float64(admitted), 4)
		}
	}
	s.Gateway = GatewaySummary{
		LagP99Ms:          round(a.lag, 3),
		SchedLatencyP99Ms: round(a.sched, 3),
		MaxHeapBytes:      a.heap,
		MaxGoroutines:     a.gor,
		MaxRSSBytes:       a.rss,
		OOMKills:          in.oomKills,
		Restarts:          in.restarts,
	}
	s.Gateway.RSSGrowthMB = round(a.rssGrowth()/(1<<20), 3)
	s.ShedCheck.Gateway = in.gatewayShed
	s.ShedCheck.Exact = in.shedExact
	if s.ShedCheck.Gateway > s.ShedCheck.Client {
		s.ShedCheck.Mismatch = s.ShedCheck.Gateway - s.ShedCheck.Client
	} else {
		s.ShedCheck.Mismatch = s.ShedCheck.Client - s.ShedCheck.Gateway
	}
	endS := a.elapsed(in.end)
	for _, f := range a.faults {
		s.Faults = append(s.Faults, a.faultSummary(f, endS, in.exp.ClientTimeout.D().Seconds()))
	}
	s.Thresholds = map[string]ThresholdResult{}
	s.Pass = true
	for _, th := range in.exp.ParsedThresholds() {
		v, note := s.Metric(th.Name)
		r := ThresholdResult{Expr: th.Expr, Value: v, Pass: th.Check(v), Note: note}
		s.Thresholds[th.Name] = r
		s.Pass = s.Pass && r.Pass
	}
	return s
}

// rssGrowth implements GatewaySummary.RSSGrowthMB (in bytes), mu held.
func (a *aggregator) rssGrowth() float64 {
	if len(a.digests) == 0 {
		return 0
	}
	split := a.digests[len(a.digests)-1].elapsed / 4
	if len(a.faults) > 0 {
		split = a.faults[0].start
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
func (a *aggregator) targetIntegralUntil(t time.Time) float64 {
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
func (a *aggregator) liveAfterKill(in []digest) float64 {
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

// usableBucket is the time over which offered and capacity are compared
// for the goodput ratio.
const usableBucket = 1.0 // seconds

// settleBand is how close the concurrency limit must come to the live slots.
const settleBand = 0.15

func (a *aggregator) faultSummary(f faultWindow, endS, clientTimeout float64) FaultSummary {
	end := f.end
	if end < 0 {
		end = endS
	}
	fs := FaultSummary{Fault: f.name, AtS: round(f.start, 3), EndS: round(end, 3), P0SuccessRate: 1}
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
		var fin0, ok0 uint64
		if before != nil {
			fin0, ok0 = before.p0Fin, before.p0OK
		}
		if after.p0Fin > fin0 {
			fs.P0SuccessRate = round(float64(after.p0OK-ok0)/float64(after.p0Fin-fin0), 6)
		}
	}
	if f.name == "node_kill" && len(in) > 0 && a.liveAfterKill(in) > 0 {
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

// Metric returns the value of a threshold metric (see ThresholdMetrics) and
// a note when the value needs one.
func (s *Summary) Metric(name string) (float64, string) {
	rate := func(o string) float64 {
		if s.Offered == 0 {
			return 0
		}
		return float64(s.Outcomes[o]) / float64(s.Offered)
	}
	switch name {
	case "p0_success_rate", "p1_success_rate", "p2_success_rate":
		return s.ByPriority[strings.ToUpper(name[:2])].SuccessRate, ""
	case "goodput_rps":
		return s.GoodputRPS, ""
	case "goodput_ratio":
		return s.GoodputRatio, ""
	case "capacity_rps":
		return s.CapacityRPS, ""
	case "unaccounted":
		return float64(s.Unaccounted), ""
	case "oom_kills":
		return float64(s.Gateway.OOMKills), ""
	case "lag_p99_ms":
		return s.Gateway.LagP99Ms, ""
	case "sched_latency_p99_ms":
		return s.Gateway.SchedLatencyP99Ms, ""
	case "max_heap_bytes":
		return s.Gateway.MaxHeapBytes, ""
	case "max_goroutines":
		return s.Gateway.MaxGoroutines, ""
	case "rss_growth_mb":
		return s.Gateway.RSSGrowthMB, ""
	case "admitted_p99_ms":
		return s.AdmittedP99Ms, ""
	case "p0_p99_ms":
		return s.ByPriority["P0"].P99Ms, ""
	case "achieved_rate_error":
		return s.AchievedRateError, ""
	case "shed_mismatch":
		if !s.ShedCheck.Exact {
			return float64(s.ShedCheck.Mismatch), "a gateway restarted: its counters since the last scrape are lost"
		}
		return float64(s.ShedCheck.Mismatch), ""
	case "limit_settle_s":
		worst, note, found := 0.0, "", false
		for _, f := range s.Faults {
			if f.Fault != "node_kill" || f.LiveSlots == 0 {
				continue // no kill, or nothing left alive to settle to
			}
			found = true
			if f.LimitSettleS >= worst {
				worst = f.LimitSettleS
			}
			if !f.Settled {
				note = fmt.Sprintf("the limit never settled within ±%.0f%% of %g live slots (value: seconds observed)", settleBand*100, f.LiveSlots)
			}
		}
		if !found {
			return math.NaN(), "no node_kill fault in this run"
		}
		if note != "" {
			return math.Inf(1), note
		}
		return worst, ""
	case "p0_success_during_faults":
		v := 1.0
		for _, f := range s.Faults {
			v = math.Min(v, f.P0SuccessRate)
		}
		return v, ""
	case "attempts_per_admitted":
		return s.AttemptsPerAdmitted, ""
	case "error_rate":
		return rate(OutcomeError), ""
	case "timeout_rate":
		return rate(OutcomeTimeout), ""
	case "generator_dropped":
		return float64(s.Outcomes[OutcomeGeneratorDropped]), ""
	}
	return math.NaN(), "unknown metric"
}

func histMs(h *hdrhistogram.Histogram, q float64) float64 {
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	return round(float64(h.ValueAtPercentile(q))/1000, 3)
}

// subTotals returns end − start: the totals of a recording that started
// while the generator ran. Histograms are subtracted bucket by bucket.
func subTotals(end, start load.Totals) load.Totals {
	d := load.Totals{
		Elapsed:     end.Elapsed - start.Elapsed,
		TargetRPS:   end.TargetRPS,
		Outstanding: end.Outstanding,
		Offered:     end.Offered - start.Offered,
		Outcomes:    map[string]uint64{},
		ByPriority:  map[string]load.PriorityTotals{},
		Admitted:    subHist(end.Admitted, start.Admitted),
	}
	if d.Elapsed > 0 {
		d.AchievedRPS = float64(d.Offered) / d.Elapsed.Seconds()
	}
	for _, o := range Outcomes {
		d.Outcomes[o] = end.Outcomes[o] - start.Outcomes[o]
	}
	for _, p := range Priorities {
		e, s := end.ByPriority[p], start.ByPriority[p]
		pt := load.PriorityTotals{Offered: e.Offered - s.Offered, Outcomes: map[string]uint64{}, Latency: subHist(e.Latency, s.Latency)}
		for _, o := range Outcomes {
			pt.Outcomes[o] = e.Outcomes[o] - s.Outcomes[o]
		}
		d.ByPriority[p] = pt
	}
	return d
}

func subHist(end, start *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if end == nil {
		return nil
	}
	if start == nil {
		return hdrhistogram.Import(end.Export())
	}
	es, ss := end.Export(), start.Export()
	if len(es.Counts) != len(ss.Counts) {
		return hdrhistogram.Import(es)
	}
	for i := range es.Counts {
		es.Counts[i] -= ss.Counts[i]
		if es.Counts[i] < 0 {
			es.Counts[i] = 0
		}
	}
	return hdrhistogram.Import(es)
}

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// failedThresholds lists the failed thresholds as "name: value (expr)".
func (s *Summary) FailedThresholds() []string {
	var out []string
	for _, name := range sortedKeys(s.Thresholds) {
		r := s.Thresholds[name]
		if !r.Pass {
			line := fmt.Sprintf("%s = %s, want %s", name, fmtValue(r.Value), r.Expr)
			if r.Note != "" {
				line += " (" + r.Note + ")"
			}
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}

func fmtValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "never"
	case math.IsNaN(v):
		return "n/a"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}
