package lab

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/internal/decimal"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/sampler"
	"github.com/levee-lab/levee/lab/scrape"
	"github.com/levee-lab/levee/lab/supervisor"
)

// sampling is the lab's tick: it keeps every child's newest /metrics scrape
// (one scraper goroutine per child, so a slow /metrics never delays a
// tick), gathers each tick's sampler.Input, calls sampler.Next, and hands
// the Sample to its sinks: the recording and the subscribers.
type sampling struct {
	l      *Lab
	tick   time.Duration
	clock  clockwork.Clock
	httpc  *http.Client
	stopCh chan struct{}
	doneCh chan struct{}
	once   sync.Once

	gateways, nodes []*scrapeSlot

	// Used by the tick goroutine only:
	state       sampler.State
	lastPrinted time.Time
	levels      levelLog

	shedBits atomicFloat // sampler.State.ShedTotal as of the last tick
	// fallbackBits is sampler.State.RedisFallbackTotal as of the last tick.
	fallbackBits atomicFloat
	// nonFiniteN counts the NaN, ±Inf and out-of-range values dropped
	// from scrapes (Sample.NonFiniteTotal).
	nonFiniteN atomic.Uint64
}

func newSampling(l *Lab) *sampling {
	s := &sampling{
		l: l, tick: l.exp.Tick.D(), clock: l.clock,
		httpc:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second, DisableCompression: true}},
		stopCh: make(chan struct{}), doneCh: make(chan struct{}),
		state: sampler.NewState(len(l.sup.Gateways()), len(l.sup.Nodes())),
	}
	s.levels.l = l
	for _, c := range l.sup.Gateways() {
		s.gateways = append(s.gateways, &scrapeSlot{child: c})
	}
	for _, c := range l.sup.Nodes() {
		s.nodes = append(s.nodes, &scrapeSlot{child: c})
	}
	return s
}

// scrapeSlot holds the newest /metrics scrape of one child.
type scrapeSlot struct {
	child  *supervisor.Child
	mu     sync.Mutex
	f      scrape.Families // guarded by mu; nil before the first good scrape
	at     time.Time       // guarded by mu: when f was taken
	starts int             // guarded by mu: the child's start count when f was taken
	warned atomic.Bool     // a non-finite value of this child was reported
}

// scrape scrapes the child once; a failed scrape leaves the slot as it was.
// It returns the series whose values were not finite (see store).
func (sl *scrapeSlot) scrape(ctx context.Context, c *http.Client, clk clockwork.Clock) []scrape.NonFinite {
	starts := sl.child.Starts()
	f, err := scrape.Scrape(ctx, c, "http://"+sl.child.Listen()+wire.PathMetrics)
	if err != nil {
		return nil
	}
	return sl.store(f, clk.Now(), starts)
}

// store keeps f, taken at at from the process of start count starts, as
// the slot's newest scrape. A NaN, ±Inf or out-of-range value in it
// (beyond ±scrape.MaxValue) is treated as missing for
// that one series (scrape.Families.DropNonFinite, against the same
// process's previous scrape), so the tick's Sample keeps everything else:
// a non-finite value used to reach the Sample, which then could not be
// written to samples.jsonl and was lost whole. It returns what it dropped.
func (sl *scrapeSlot) store(f scrape.Families, at time.Time, starts int) []scrape.NonFinite {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	var prev scrape.Families
	if sl.starts == starts {
		prev = sl.f
	}
	bad := f.DropNonFinite(prev)
	sl.f, sl.at, sl.starts = f, at, starts
	return bad
}

// latest is the child's sampler view at now: its newest scrape, or none
// when it is down, restarted since, or was not scraped for staleAfter.
func (sl *scrapeSlot) latest(now time.Time, staleAfter time.Duration) sampler.Child {
	c := sl.child
	v := sampler.Child{Starts: c.Starts(), Started: c.StartedAt(), Up: c.Up(), Addr: c.Listen(), RestartIn: c.RestartIn(time.Now())}
	if !v.Up {
		return v
	}
	sl.mu.Lock()
	f, at, starts := sl.f, sl.at, sl.starts
	sl.mu.Unlock()
	if f != nil && starts == v.Starts && now.Sub(at) <= staleAfter {
		v.Scrape, v.At = f, at
	}
	return v
}

func (s *sampling) scrapeOnce(sl *scrapeSlot) {
	ctx, cancel := context.WithTimeout(s.l.ctx, max(4*s.tick, time.Second))
	defer cancel()
	s.nonFinite(sl, sl.child.Name(), sl.scrape(ctx, s.httpc, s.clock))
}

// nonFinite counts the unusable values (scrape.DropNonFinite) a scrape of sl's child (called
// name) dropped (Sample.NonFiniteTotal) and reports the first of each
// child on the error log, once: later ones are only counted.
func (s *sampling) nonFinite(sl *scrapeSlot, name string, bad []scrape.NonFinite) {
	if len(bad) == 0 {
		return
	}
	s.nonFiniteN.Add(uint64(len(bad)))
	if sl.warned.Swap(true) {
		return
	}
	how := "left out of this scrape"
	if bad[0].Carried {
		how = "kept at its previous value"
	}
	s.l.progressErr("%s /metrics: %s is not a usable number: %s, the rest of the sample kept (%d such value(s) in this scrape; later ones are counted in samples.jsonl's nonfinite_values_total, not logged)",
		name, bad[0], how, len(bad))
}

// scrapeLoop keeps sl filled with its child's newest scrape until stop
// closes. A scrape may take longer than a tick on a saturated machine; the
// ticks go on with the previous scrape meanwhile.
func (s *sampling) scrapeLoop(sl *scrapeSlot, stop <-chan struct{}) {
	t := s.clock.NewTicker(s.tick)
	defer t.Stop()
	for {
		if sl.child.Up() {
			s.scrapeOnce(sl)
		}
		select {
		case <-stop:
			return
		case <-t.Chan():
		}
	}
}

// scrapeAllNow scrapes every live child once, concurrently, and waits.
func (s *sampling) scrapeAllNow() {
	var wg sync.WaitGroup
	for _, sl := range append(append([]*scrapeSlot(nil), s.gateways...), s.nodes...) {
		if sl.child.Up() {
			wg.Go(func() { s.scrapeOnce(sl) })
		}
	}
	wg.Wait()
}

func (s *sampling) loop() {
	defer close(s.doneCh)
	stopScrapers := make(chan struct{})
	var scrapers sync.WaitGroup
	defer func() { close(stopScrapers); scrapers.Wait() }()
	for _, sl := range append(append([]*scrapeSlot(nil), s.gateways...), s.nodes...) {
		scrapers.Go(func() { s.scrapeLoop(sl, stopScrapers) })
	}
	t := s.clock.NewTicker(s.tick)
	defer t.Stop()
	for {
		select {
		case <-s.stopCh:
			return
		case <-t.Chan():
			s.take()
		}
	}
}

// stop ends the loop and takes one last sample.
func (s *sampling) stop() {
	s.once.Do(func() {
		close(s.stopCh)
		<-s.doneCh
		s.scrapeAllNow() // the last sample must see the final counters
		s.take()
	})
}

// shedTotal is the gateways' shed counters summed and accumulated across
// restarts, as of the last tick. Safe from any goroutine.
func (s *sampling) shedTotal() float64 { return s.shedBits.load() }

// fallbackTotal is the gateways' rate-limit store fallbacks summed and
// accumulated across restarts, as of the last tick. Safe from any goroutine.
func (s *sampling) fallbackTotal() float64 { return s.fallbackBits.load() }

// take builds and delivers one Sample from the newest scrapes; it never
// waits for a scrape.
func (s *sampling) take() {
	c := s.l.recs.current()
	out := s.next(s.clock.Now(), c != nil)
	smp := out.Sample
	s.l.latest.Store(&smp)
	if c != nil {
		if c.agg != nil {
			c.agg.Add(smp, smp.WindowS, out.Completions, out.Saturated, out.P0Finished)
		}
		_ = c.rec.WriteSample(smp)
		s.levels.observe(smp.Level, smp.GatewayStale)
	}
	s.l.subs.broadcast(smp)
	if s.l.opts.Progress != nil && smp.Time.Sub(s.lastPrinted) >= 2*time.Second {
		s.lastPrinted = smp.Time
		s.l.progress("%s", progressLine(smp))
	}
}

// next gathers the tick's input and runs the sampler.
func (s *sampling) next(now time.Time, recording bool) sampler.Output {
	l := s.l
	staleAfter := 4 * s.tick
	in := sampler.Input{
		Now: now, Tick: s.tick, Window: l.gen.Tick(),
		Defenses: l.Defenses(), Recording: recording,
	}
	l.mu.Lock()
	in.Start = l.start
	l.mu.Unlock()
	for _, sl := range s.gateways {
		in.Gateways = append(in.Gateways, sl.latest(now, staleAfter))
	}
	for _, sl := range s.nodes {
		in.Nodes = append(in.Nodes, sl.latest(now, staleAfter))
	}
	counters := l.sup.Counters()
	// The largest reading since the last tick (the last ones included):
	// a gateway OOM-killed between two ticks reads 0 at the tick, and its
	// peak, the reading that killed it (above the limit), would be in no
	// sample.
	in.RSSBytes, in.RSSMaxBytes, in.OOMKills = counters.RSSBytes, l.sup.TakeRSSPeak(), counters.OOMKills
	for _, a := range l.ctl.Active() {
		in.Faults = append(in.Faults, runfiles.ActiveFault{Name: a.Name, Detail: a.Detail})
	}
	if ls := l.Lesson(); ls.Step > 0 {
		in.Lesson = ls.Text
	}
	out, st := sampler.Next(s.state, in)
	out.Sample.NonFiniteTotal = s.nonFiniteN.Load()
	s.state = st
	s.shedBits.store(st.ShedTotal())
	s.fallbackBits.store(st.RedisFallbackTotal())
	return out
}

// subscribers are the dashboard's sample channels. Safe for concurrent use.
type subscribers struct {
	mu     sync.Mutex
	chans  map[chan runfiles.Sample]struct{} // guarded by mu
	closed bool                              // guarded by mu
}

func (b *subscribers) init() { b.chans = map[chan runfiles.Sample]struct{}{} }

// Samples delivers one Sample per tick until the lab stops, then closes.
// Each call returns a new channel; a slow reader misses samples.
func (l *Lab) Samples() <-chan runfiles.Sample {
	ch := make(chan runfiles.Sample, 8)
	b := &l.subs
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch
	}
	b.chans[ch] = struct{}{}
	return ch
}

// broadcast hands s to every subscriber that has room.
func (b *subscribers) broadcast(s runfiles.Sample) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.chans {
		select {
		case ch <- s:
		default:
		}
	}
}

// closeAll closes every channel; later subscribers get a closed one.
func (b *subscribers) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.chans {
		close(ch)
	}
	b.chans = nil
}

// round is decimal.Round: a finite figure stays finite.
func round(v float64, digits int) float64 { return decimal.Round(v, digits) }

// atomicFloat is a float64 read and written atomically.
type atomicFloat struct{ bits atomic.Uint64 }

func (f *atomicFloat) load() float64   { return math.Float64frombits(f.bits.Load()) }
func (f *atomicFloat) store(v float64) { f.bits.Store(math.Float64bits(v)) }

// progressLine is the line printed every two seconds.
func progressLine(smp runfiles.Sample) string {
	lvl := smp.Level
	if lvl == "" {
		lvl = "?"
	}
	shed := 0.0
	for _, v := range smp.ShedRPSByReason {
		shed += v
	}
	line := fmt.Sprintf("t=%5.1fs target %6.0f/s offered %6.0f/s ok %5.0f/s cap %4.0f/s  P0 %5.1f%%  level %-6s lag p99 %4.0fms  limit %3.0f  inflight %4.0f  shed %5.0f/s  OOM %d",
		smp.Elapsed, smp.TargetRPS, smp.OfferedRPS, smp.GoodputRPS, smp.CapacityRPS, smp.ByPriority[wire.PriorityP0].SuccessRate*100, lvl,
		smp.LagProbeP99Ms, smp.ConcurrencyLimit, smp.Inflight, shed, smp.OOMKills)
	if smp.ClientRetriesTotal > 0 || smp.ClientRetriesDeniedTotal > 0 {
		line += fmt.Sprintf("  retries %4.0f/s", smp.ClientRetryRPS)
	}
	return line
}
