package sampler

import (
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/scrape"
)

// SuccessWindow is how far back Sample.ByPriority[…].SuccessRate looks.
const SuccessWindow = 3 * time.Second

// Child is what one tick knows of one child process.
type Child struct {
	// Scrape is the child's newest /metrics scrape; nil when there is no
	// current one (the child is down, restarted since, or was not scraped
	// for a few ticks).
	Scrape scrape.Families
	At     time.Time // when Scrape was taken
	// Starts counts the child's processes: a new value means a new process,
	// whose counters start from zero.
	Starts int
	// Started is when the current process was started, on At's clock (the
	// supervisor's Child.StartedAt); zero when unknown, and then the
	// process's process_start_time_seconds stands in.
	Started time.Time
	Up      bool
	// Addr and RestartIn are shown for nodes: the traffic address, and the
	// time until a scheduled restart of a node that is down.
	Addr      string
	RestartIn time.Duration
}

// Input is everything one tick knows besides the State.
type Input struct {
	Now   time.Time
	Start time.Time     // when load started: Sample.Elapsed counts from here
	Tick  time.Duration // the sampling period
	// Window is the load generator's tick (its counts since the last one).
	Window   load.Window
	Gateways []Child
	Nodes    []Child
	// RSSBytes, RSSMaxBytes and OOMKills are the supervisor's: the
	// gateways' summed VmRSS, the largest gateway's VmRSS, and the OOM
	// kills so far.
	RSSBytes    float64
	RSSMaxBytes float64
	OOMKills    int
	// Defenses are the switches as the lab last set them; the Sample shows
	// what a gateway reports instead when one does.
	Defenses  map[string]bool
	Faults    []runfiles.ActiveFault
	Lesson    string // the narration showing now ("" for none)
	Recording bool
}

// Output is one tick's Sample and what the run's summary needs beside it.
type Output struct {
	Sample      runfiles.Sample
	Completions float64 // the nodes' completion rate (req/s)
	Saturated   bool    // every live node had every slot busy
	P0Finished  uint64  // P0 requests finished so far (any outcome)
}

// State is what the sampler carries from one tick to the next: the previous
// scrape of each child (rates are deltas between scrapes), recent success
// counts, each node's service-time window and the gateways' shed counters
// accumulated across restarts. Make it with NewState.
type State struct {
	gateways []gatewayState
	nodes    []nodeState
	recent   map[string][]prioCount // per priority, newest last
	shed     float64                // levee_shed_total over every gateway process
	admitted float64                // levee_admitted_total over every gateway process
	// fallbacks is levee_ratelimit_store_fallback_total over every gateway
	// process.
	fallbacks float64
}

// NewState returns the state before the first tick of a lab with the given
// number of gateways and nodes.
func NewState(gateways, nodes int) State {
	return State{
		gateways: make([]gatewayState, gateways),
		nodes:    make([]nodeState, nodes),
		recent:   map[string][]prioCount{},
	}
}

// ShedTotal is the gateways' levee_shed_total summed and accumulated across
// gateway restarts, as of the last tick.
func (s State) ShedTotal() float64 { return s.shed }

// RedisFallbackTotal is the gateways' rate-limit decisions made without
// the shared store (levee_ratelimit_store_fallback_total), summed and
// accumulated across gateway restarts, as of the last tick.
func (s State) RedisFallbackTotal() float64 { return s.fallbacks }

// clone copies s so that Next never changes its argument.
func (s State) clone() State {
	c := State{
		gateways:  append([]gatewayState(nil), s.gateways...),
		nodes:     append([]nodeState(nil), s.nodes...),
		recent:    make(map[string][]prioCount, len(s.recent)),
		shed:      s.shed,
		admitted:  s.admitted,
		fallbacks: s.fallbacks,
	}
	for k, v := range s.recent {
		c.recent[k] = append([]prioCount(nil), v...)
	}
	return c
}

// Next merges one tick's scrapes and generator window into a Sample. It is
// a pure function: it does no I/O, reads no clock and takes no lock; the
// same State and Input always give the same Output and next State, and prev
// is left as it was.
func Next(prev State, in Input) (Output, State) {
	st := prev.clone()
	smp := runfiles.Sample{
		Time:        in.Now.UTC(),
		Elapsed:     round(in.Now.Sub(in.Start).Seconds(), 3),
		RSSBytes:    in.RSSBytes,
		RSSMaxBytes: in.RSSMaxBytes,
		OOMKills:    in.OOMKills,
		Faults:      in.Faults,
		Lesson:      in.Lesson,
		Recording:   in.Recording,
	}
	st.addClient(&smp, in)
	st.addAgentClient(&smp, in)
	st.addGateways(&smp, in)
	completions, saturated := st.addNodes(&smp, in)
	markEjections(&smp, in.Gateways)
	return Output{
		Sample:      smp,
		Completions: completions,
		Saturated:   saturated,
		P0Finished:  in.Window.ByPriority[wire.PriorityP0].FinishedTotal,
	}, st
}

// prioCount is one tick of one priority: ok and finished.
type prioCount struct{ ok, finished uint64 }

// recentRate adds this tick's count under key and returns ok / finished
// over the last SuccessWindow (1 when nothing finished) and finished.
func (st *State) recentRate(key string, c prioCount, tick time.Duration) (float64, uint64) {
	keep := max(int(SuccessWindow/tick), 1)
	r := append(st.recent[key], c)
	if len(r) > keep {
		r = r[len(r)-keep:]
	}
	st.recent[key] = r
	var ok, fin uint64
	for _, c := range r {
		ok += c.ok
		fin += c.finished
	}
	if fin == 0 {
		return 1, 0
	}
	return float64(ok) / float64(fin), fin
}

// rateSeconds is the length a window's counts are divided by to make
// per-second rates: the window's real length. A tick that fired late is
// followed by an early one (the ticker keeps its schedule), so both are
// over their real length, or the short one reads as a dip of the rates by
// the lateness (a 150 ms window over a 250 ms tick read 60 % of the
// truth). Only a window shorter than half a tick — the run's closing
// window, cut a few milliseconds after the last tick, whose few counts
// over its length would be a spike — is taken over one tick.
func rateSeconds(window, tick time.Duration) float64 {
	if window >= tick/2 && window > 0 {
		return window.Seconds()
	}
	return max(window.Seconds(), tick.Seconds())
}

// addClient fills the generator's (client-side) view.
func (st *State) addClient(smp *runfiles.Sample, in Input) {
	w := in.Window
	per := func(n uint64) float64 { return float64(n) / rateSeconds(w.Duration, in.Tick) }
	smp.TargetRPS = w.TargetRPS
	smp.WindowS = w.Duration.Seconds()
	smp.OfferedRPS = per(w.Offered)
	smp.Outstanding = w.Outstanding
	smp.OfferedTotal = w.OfferedTotal
	smp.ClientRetryRPS = per(w.Retries)
	smp.ClientRetriesTotal, smp.ClientRetriesDeniedTotal = w.RetriesTotal, w.RetriesDeniedTotal
	smp.AdmittedP50Ms, smp.AdmittedP99Ms = w.AdmittedP50Ms, w.AdmittedP99Ms
	smp.AdmittedHist = encodeHist(w.AdmittedHist)
	smp.OutcomeRPS = map[string]float64{}
	smp.OutcomeTotal = map[string]uint64{}
	for _, o := range load.Outcomes {
		smp.OutcomeRPS[o] = per(w.Outcomes[o])
		smp.OutcomeTotal[o] = w.OutcomeTotal[o]
	}
	smp.GoodputRPS = per(w.Outcomes[wire.OutcomeOK.String()])
	smp.ByPriority = map[string]runfiles.PrioritySample{}
	for _, p := range load.Priorities {
		pw := w.ByPriority[p]
		rate, fin := st.recentRate(p, prioCount{ok: pw.OK, finished: pw.Finished}, in.Tick)
		smp.ByPriority[p] = runfiles.PrioritySample{OfferedTotal: pw.OfferedTotal, OKTotal: pw.OKTotal, FinishedTotal: pw.FinishedTotal,
			PassedRateLimitTotal: pw.PassedRateLimitTotal, ReferencePassedTotal: pw.ReferencePassedTotal,
			SuccessRate: round(rate, 6), SuccessFinished: fin, P50Ms: pw.P50Ms, P99Ms: pw.P99Ms, Hist: encodeHist(pw.Latency)}
	}
}
