package lab

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/scrape"
)

// successWindow is how far back Sample.ByPriority[…].SuccessRate looks.
const successWindow = 3 * time.Second

var levelNames = []string{"green", "yellow", "red", "black"}

// nodeConfig is what a node last reported about its configuration.
type nodeConfig struct {
	slots, mean float64 // mean service time in seconds
	known       bool
}

// prioCount is one tick of one priority: ok and finished.
type prioCount struct{ ok, finished uint64 }

// sampler scrapes every child each tick, merges the scrapes with the
// generator's window into one Sample, and hands it to the recorder and the
// subscribers. Only its own goroutine calls take; shedTotal is safe from
// any goroutine.
type sampler struct {
	l      *Lab
	tick   time.Duration
	stopCh chan struct{}
	doneCh chan struct{}
	once   sync.Once

	// Used by the sampling goroutine only:
	prevGW      []scrape.Families
	prevGWAt    []time.Time
	gwStarts    []int
	prevNode    []scrape.Families
	prevNodeAt  []time.Time
	nodeStarts  []int
	nodeCfg     []nodeConfig
	recent      map[string][]prioCount // per priority, newest last
	lastPrinted time.Time

	// Latest scrape of every child, written by one scraper goroutine per
	// child, so a slow /metrics never delays a tick.
	gwScrapes   []*scrapeSlot
	nodeScrapes []*scrapeSlot
	// Rates derived from the last two scrapes of each child, carried over to
	// ticks that got no new scrape (sampling goroutine only).
	gwRates   []gatewayRates
	nodeRates []float64 // completions/s per node
	nodeSvc   []serviceWindow

	mu      sync.Mutex
	shedAcc []float64 // guarded by mu: per gateway, levee_shed_total accumulated across restarts
}

// serviceWindow is a node's observed slot-holding time over its last
// scrapes (about 5 s at 4 Hz): the service time the capacity line uses, so a
// mix of short decisions and long streams shows its real capacity rather
// than the configured non-stream mean.
type serviceWindow struct {
	sum, count [20]float64 // per scrape, a ring
	next       int
}

func (w *serviceWindow) add(sum, count float64) {
	w.sum[w.next], w.count[w.next] = sum, count
	w.next = (w.next + 1) % len(w.sum)
}

// mean returns the observed mean service time, or false when too few
// requests finished to say (then the configured mean stands).
func (w *serviceWindow) mean() (float64, bool) {
	var s, c float64
	for i := range w.sum {
		s += w.sum[i]
		c += w.count[i]
	}
	if c < minServiceObservations || s <= 0 {
		return 0, false
	}
	return s / c, true
}

// minServiceObservations is how many finished requests a node's service
// window needs before its observed mean replaces the configured one.
const minServiceObservations = 50

// gatewayRates are one gateway's shed rates from its last two scrapes.
type gatewayRates struct {
	byReason, byPriority map[string]float64
}

// scrapeSlot holds the newest /metrics scrape of one child.
type scrapeSlot struct {
	mu     sync.Mutex
	f      scrape.Families // guarded by mu; nil before the first good scrape
	at     time.Time       // guarded by mu: when f was taken
	starts int             // guarded by mu: the child's start count when f was taken
}

func (sl *scrapeSlot) get() (scrape.Families, time.Time, int) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.f, sl.at, sl.starts
}

// staleAfter is how old a child's last scrape may be before its numbers
// count as unknown rather than current.
func (s *sampler) staleAfter() time.Duration { return 4 * s.tick }

func newSampler(l *Lab) *sampler {
	ng, nn := len(l.gateways), len(l.nodes)
	return &sampler{
		l: l, tick: l.exp.Tick.D(),
		stopCh: make(chan struct{}), doneCh: make(chan struct{}),
		prevGW: make([]scrape.Families, ng), prevGWAt: make([]time.Time, ng), gwStarts: make([]int, ng),
		prevNode: make([]scrape.Families, nn), prevNodeAt: make([]time.Time, nn), nodeStarts: make([]int, nn),
		nodeCfg: make([]nodeConfig, nn),
		recent:  map[string][]prioCount{},
		shedAcc: make([]float64, ng),
		gwRates: make([]gatewayRates, ng), nodeRates: make([]float64, nn), nodeSvc: make([]serviceWindow, nn),
	}
}

// scrapeInto scrapes c once into sl; a failed scrape leaves sl as it was.
func (s *sampler) scrapeInto(c *child, sl *scrapeSlot) {
	starts := c.Starts()
	ctx, cancel := context.WithTimeout(s.l.ctx, max(4*s.tick, time.Second))
	defer cancel()
	f, err := scrape.Scrape(ctx, s.l.httpc, "http://"+c.Listen()+"/metrics")
	if err != nil {
		return
	}
	sl.mu.Lock()
	sl.f, sl.at, sl.starts = f, time.Now(), starts
	sl.mu.Unlock()
}

// scrapeAllNow scrapes every live child once, concurrently, and waits.
func (s *sampler) scrapeAllNow() {
	var wg sync.WaitGroup
	fill := func(slots []*scrapeSlot, children []*child) {
		for i, c := range children {
			if i >= len(slots) || slots[i] == nil || !c.Up() {
				continue
			}
			wg.Go(func() { s.scrapeInto(c, slots[i]) })
		}
	}
	fill(s.gwScrapes, s.l.gateways)
	fill(s.nodeScrapes, s.l.nodes)
	wg.Wait()
}

// scrapeLoop keeps sl filled with c's newest scrape until stop closes. A
// scrape may take longer than a tick on a saturated machine; the tick goes
// on with the previous scrape meanwhile.
func (s *sampler) scrapeLoop(c *child, sl *scrapeSlot, stop <-chan struct{}) {
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		if c.Up() {
			s.scrapeInto(c, sl)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (s *sampler) loop() {
	defer close(s.doneCh)
	stopScrapers := make(chan struct{})
	var scrapers sync.WaitGroup
	defer func() { close(stopScrapers); scrapers.Wait() }()
	s.gwScrapes = make([]*scrapeSlot, len(s.l.gateways))
	for i, c := range s.l.gateways {
		s.gwScrapes[i] = &scrapeSlot{}
		scrapers.Go(func() { s.scrapeLoop(c, s.gwScrapes[i], stopScrapers) })
	}
	s.nodeScrapes = make([]*scrapeSlot, len(s.l.nodes))
	for i, c := range s.l.nodes {
		s.nodeScrapes[i] = &scrapeSlot{}
		scrapers.Go(func() { s.scrapeLoop(c, s.nodeScrapes[i], stopScrapers) })
	}
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		select {
		case <-s.stopCh:
			return
		case <-t.C:
			s.take()
		}
	}
}

// stop ends the loop and takes one last sample.
func (s *sampler) stop() {
	s.once.Do(func() {
		close(s.stopCh)
		<-s.doneCh
		s.scrapeAllNow() // the last sample must see the final counters
		s.take()
	})
}

// shedTotal is the gateways' shed counters summed and accumulated across
// restarts.
func (s *sampler) shedTotal() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := 0.0
	for _, v := range s.shedAcc {
		t += v
	}
	return t
}

// take builds and delivers one Sample from the newest scrapes; it never
// waits for a scrape.
func (s *sampler) take() {
	l := s.l
	now := time.Now()
	gw, gwAt := s.latest(s.gwScrapes, l.gateways, now)
	nodes, nodeAt := s.latest(s.nodeScrapes, l.nodes, now)
	w := l.gen.Tick()
	smp, completions, saturated := s.merge(now, w, gw, gwAt, nodes, nodeAt)

	l.mu.Lock()
	rec := l.rec
	l.mu.Unlock()
	if rec != nil {
		smp.Recording = true
		dt := w.Duration.Seconds()
		if rec.agg != nil {
			rec.agg.add(smp, dt, completions, saturated, w.ByPriority["P0"].FinishedTotal)
		}
		rec.writeError(rec.samples.Write(smp), l.opts.Progress)
	}
	l.broadcast(smp)
	if l.opts.Progress != nil && now.Sub(s.lastPrinted) >= 2*time.Second {
		s.lastPrinted = now
		s.print(smp)
	}
}

// latest returns each child's newest scrape and its time, or nil for a child
// that is down, has restarted since, or was not scraped for staleAfter.
func (s *sampler) latest(slots []*scrapeSlot, children []*child, now time.Time) ([]scrape.Families, []time.Time) {
	fs := make([]scrape.Families, len(children))
	ats := make([]time.Time, len(children))
	for i, c := range children {
		if i >= len(slots) || slots[i] == nil || !c.Up() {
			continue
		}
		f, at, starts := slots[i].get()
		if f == nil || starts != c.Starts() || now.Sub(at) > s.staleAfter() {
			continue
		}
		fs[i], ats[i] = f, at
	}
	return fs, ats
}

// merge builds the Sample from the generator's window and the newest scrapes
// (nil for a child with no current scrape) taken at the given times. It also returns the nodes' completion
// rate and whether every live node had all its slots busy.
func (s *sampler) merge(now time.Time, w load.Window, gw []scrape.Families, gwAt []time.Time, nodes []scrape.Families, nodeAt []time.Time) (Sample, float64, bool) {
	l := s.l
	dt := w.Duration.Seconds()
	// Rates are over at least one tick: the last sample of a run closes a
	// window of a few milliseconds, and n/dt over it would be noise.
	rateDT := max(dt, s.tick.Seconds())
	per := func(n uint64) float64 { return float64(n) / rateDT }
	smp := Sample{
		Time:              now.UTC(),
		Elapsed:           round(now.Sub(l.start).Seconds(), 3),
		TargetRPS:         w.TargetRPS,
		OfferedRPS:        per(w.Offered),
		Outstanding:       w.Outstanding,
		OutcomeRPS:        map[string]float64{},
		OutcomeTotal:      map[string]uint64{},
		OfferedTotal:      w.OfferedTotal,
		ByPriority:        map[string]PrioritySample{},
		AdmittedP50Ms:     w.AdmittedP50Ms,
		AdmittedP99Ms:     w.AdmittedP99Ms,
		ShedRPSByReason:   map[string]float64{},
		ShedRPSByPriority: map[string]float64{},
	}
	for _, o := range Outcomes {
		smp.OutcomeRPS[o] = per(w.Outcomes[o])
		smp.OutcomeTotal[o] = w.OutcomeTotal[o]
	}
	smp.GoodputRPS = per(w.Outcomes[OutcomeOK])
	// Admitted requests are counted when they finish, like goodput, so that
	// goodput ≤ admitted holds tick by tick: a shed decided late (a queue
	// timeout) can never make this tick's admissions negative or inflated.
	smp.AdmittedRPS = per(w.Outcomes[OutcomeOK] + w.Outcomes[OutcomeFallback] + w.Outcomes[OutcomeTimeout] + w.Outcomes[OutcomeError])
	keep := int(successWindow / s.tick)
	if keep < 1 {
		keep = 1
	}
	for _, p := range Priorities {
		pw := w.ByPriority[p]
		r := append(s.recent[p], prioCount{ok: pw.OK, finished: pw.Finished})
		if len(r) > keep {
			r = r[len(r)-keep:]
		}
		s.recent[p] = r
		var ok, fin uint64
		for _, c := range r {
			ok += c.ok
			fin += c.finished
		}
		rate := 1.0
		if fin > 0 {
			rate = float64(ok) / float64(fin)
		}
		smp.ByPriority[p] = PrioritySample{OfferedTotal: pw.OfferedTotal, OKTotal: pw.OKTotal, SuccessRate: round(rate, 6), P50Ms: pw.P50Ms, P99Ms: pw.P99Ms}
	}

	// Gateways.
	level := -1.0
	var defenses map[string]bool
	l.mu.Lock()
	for i := range l.gateways {
		smp.RSSBytes += float64(l.gwRSS[i])
	}
	smp.OOMKills = l.oomKills
	labDefenses := make(map[string]bool, len(l.defenses))
	for k, v := range l.defenses {
		labDefenses[k] = v
	}
	lesson := l.lessonLocked()
	l.mu.Unlock()
	for i, c := range l.gateways {
		f := gw[i]
		if starts := c.Starts(); starts != s.gwStarts[i] {
			s.gwStarts[i] = starts
			s.prevGW[i] = scrape.Families{} // a new process counts from zero
			s.prevGWAt[i] = time.Time{}
		}
		if f == nil {
			smp.GatewayStale = true
			continue
		}
		if v, ok := f.Max("levee_overload_level", nil); ok {
			level = math.Max(level, v)
		}
		if v, ok := f.Value("levee_lag_probe_seconds", map[string]string{"quantile": "0.99"}); ok {
			smp.LagProbeP99Ms = math.Max(smp.LagProbeP99Ms, v*1000)
		}
		if v, ok := f.Value("levee_sched_latency_seconds", map[string]string{"quantile": "0.99"}); ok {
			smp.SchedLatencyP99Ms = math.Max(smp.SchedLatencyP99Ms, v*1000)
		}
		if v, ok := f.Value("levee_gc_pause_seconds", map[string]string{"quantile": "0.99"}); ok {
			smp.GCPauseP99Ms = math.Max(smp.GCPauseP99Ms, v*1000)
		}
		smp.HeapBytes += f.Sum("levee_heap_bytes", nil)
		smp.Goroutines += f.Sum("go_goroutines", nil)
		smp.Inflight += f.Sum("levee_inflight", nil)
		smp.QueueDepth += f.Sum("levee_queue_depth", nil)
		smp.ConcurrencyLimit += f.Sum("levee_concurrency_limit", map[string]string{"class": "ai"})
		smp.TokensInflight += f.Sum("levee_tokens_inflight", nil)
		smp.UpstreamAttemptsTotal += f.Sum("levee_upstream_attempts_total", nil)
		if defenses == nil && f.Has("levee_defense_enabled") {
			defenses = map[string]bool{}
			for k, v := range f.ByLabel("levee_defense_enabled", "defense") {
				defenses[k] = v > 0
			}
		}
		if at := gwAt[i]; at.After(s.prevGWAt[i]) { // a new scrape: new rates
			prev := s.prevGW[i]
			if prev == nil {
				prev = scrape.Families{}
			}
			since := at.Sub(s.prevGWAt[i]).Seconds()
			if s.prevGWAt[i].IsZero() {
				since = dt
			}
			r := gatewayRates{byReason: map[string]float64{}, byPriority: map[string]float64{}}
			if since > 0 {
				for k, v := range f.ByLabelDelta(prev, "levee_shed_total", "reason", nil) {
					r.byReason[k] = v / since
				}
				for k, v := range f.ByLabelDelta(prev, "levee_shed_total", "priority", nil) {
					r.byPriority[k] = v / since
				}
			}
			s.gwRates[i] = r
			d := f.SumDelta(prev, "levee_shed_total", nil)
			s.mu.Lock()
			s.shedAcc[i] += d
			s.mu.Unlock()
			s.prevGW[i], s.prevGWAt[i] = f, at
		}
		for k, v := range s.gwRates[i].byReason {
			smp.ShedRPSByReason[k] += v
		}
		for k, v := range s.gwRates[i].byPriority {
			smp.ShedRPSByPriority[k] += v
		}
	}
	if level >= 0 && int(level) < len(levelNames) {
		smp.Level = levelNames[int(level)]
	}
	if defenses == nil {
		defenses = labDefenses
	}
	smp.Defenses = defenses

	// Nodes.
	completions := 0.0
	saturated := true
	live := 0
	for i, c := range l.nodes {
		f := nodes[i]
		up := c.Up()
		if starts := c.Starts(); starts != s.nodeStarts[i] {
			s.nodeStarts[i] = starts
			s.prevNode[i] = scrape.Families{}
			s.prevNodeAt[i] = time.Time{}
			s.nodeSvc[i] = serviceWindow{}
		}
		ns := NodeSample{Index: i, Addr: c.Listen(), Up: up && f != nil}
		if !up {
			ns.RestartIn = round(c.RestartIn(now).Seconds(), 1)
		}
		if f != nil {
			ns.Busy = f.Sum("levee_fakemodel_in_service", nil)
			ns.Queued = f.Sum("levee_fakemodel_queued", nil)
			ns.Slots = f.Sum("levee_fakemodel_slots", nil)
			if mean, ok := f.Max("levee_fakemodel_mean_service_seconds", nil); ok && mean > 0 {
				s.nodeCfg[i] = nodeConfig{slots: ns.Slots, mean: mean, known: true}
			}
			if at := nodeAt[i]; at.After(s.prevNodeAt[i]) {
				prev := s.prevNode[i]
				if prev == nil {
					prev = scrape.Families{}
				}
				since := at.Sub(s.prevNodeAt[i]).Seconds()
				if s.prevNodeAt[i].IsZero() {
					since = dt
				}
				s.nodeRates[i] = 0
				if since > 0 {
					s.nodeRates[i] = f.SumDelta(prev, "levee_fakemodel_requests_total", map[string]string{"outcome": "ok"}) / since
				}
				s.nodeSvc[i].add(f.SumDelta(prev, "levee_fakemodel_service_seconds_sum", nil),
					f.SumDelta(prev, "levee_fakemodel_service_seconds_count", nil))
				s.prevNode[i], s.prevNodeAt[i] = f, at
			}
			completions += s.nodeRates[i]
			if ns.Slots <= 0 || ns.Busy < ns.Slots {
				saturated = false
			}
		} else if up {
			saturated = false // a live node we could not read
		} else if cfg := s.nodeCfg[i]; cfg.known {
			ns.Slots = cfg.slots
		}
		if up {
			live++
			// Capacity counts every live process: slots / mean service
			// time, observed over the last seconds when enough requests
			// finished, else as configured (reported by the node).
			if cfg := s.nodeCfg[i]; cfg.known {
				mean := cfg.mean
				if m, ok := s.nodeSvc[i].mean(); ok {
					mean = m
				}
				smp.CapacityRPS += cfg.slots / mean
			}
		}
		smp.Nodes = append(smp.Nodes, ns)
	}
	if live == 0 {
		saturated = false
	}
	smp.CapacityRPS = round(smp.CapacityRPS, 3)

	for _, a := range l.ctl.Active() {
		smp.Faults = append(smp.Faults, ActiveFault{Name: a.Name, Detail: a.Detail})
	}
	if lesson.Step > 0 {
		smp.Lesson = lesson.Text
	}
	return smp, completions, saturated
}

// print writes one progress line.
func (s *sampler) print(smp Sample) {
	p0 := smp.ByPriority["P0"].SuccessRate
	lvl := smp.Level
	if lvl == "" {
		lvl = "?"
	}
	s.l.progress("t=%5.1fs target %6.0f/s offered %6.0f/s ok %5.0f/s cap %4.0f/s  P0 %5.1f%%  level %-6s lag p99 %4.0fms  limit %3.0f  inflight %4.0f  shed %5.0f/s  OOM %d",
		smp.Elapsed, smp.TargetRPS, smp.OfferedRPS, smp.GoodputRPS, smp.CapacityRPS, p0*100, lvl,
		smp.LagProbeP99Ms, smp.ConcurrencyLimit, smp.Inflight, sumMap(smp.ShedRPSByReason), smp.OOMKills)
}

func sumMap(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}
