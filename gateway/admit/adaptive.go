package admit

import (
	"sync"
	"sync/atomic"
	"time"
)

// adaptive is the machinery the Gradient and AIMD limiters share. It
// measures, in round trips, how many requests wait in the backend's
// queues, and states every margin in the noise it measured: nothing in it
// is sized for a workload (no time, rate or sample count). step is the
// algorithm that turns a measurement into a limit.
//
// # The queue estimate
//
// A queue at the backend adds about the same wait W to every request that
// passes it, so the mean of the fastest half of a round trip's requests
// (Trim) shifts by W like any quantile, but averages many order statistics
// (about twice as precise as the p25 for lognormal service times) and is
// immune to the tail. Little's law turns the wait into requests: the
// backend completes X requests per second, so
//
//	queue ≈ (stat − base) × X
//
// where stat is that mean of the latency signal (the time to first token
// for a stream, whose length is not congestion; the RTT otherwise) and
// base the same with no queue. The backend's capacity is then
// inflight − queue, in requests, whatever its service time, tail or slot
// count.
//
// # Two kinds of request
//
// Streams (judged by their first token) and plain calls (by their whole
// round trip) read differently with no queue, and the mix of a round trip
// follows the priorities, not the backend (P0 may be all plain calls, and
// it is served first). The limiter measures the kinds' offset where there
// is no queue and subtracts it from plain calls, so that both read alike
// (see kinds.go).
//
// # Round trips are cohorts of tickets
//
// The limiter numbers the requests it admits (Ticket) and judges them by
// admission, not by completion, in cohorts of consecutive tickets. A
// round trip is as many tickets as the limit (in one round trip as many
// requests start as are in flight); a cohort is cohortShare of it, half a
// round trip, judged once every ticket is back, or the share its
// statistic keeps is and the rest has been out longer than cutMargin ×
// the recent cut (see ready). The schedules below (windows, probes) count
// cohorts.
// Judging by completion favours the fast: right after the limit rises,
// the requests that finish first are the short ones, and a window of
// completions reads fast, or after a cut, slow. A cohort's missing
// requests are its slowest, so its fastest half is known before they are
// back.
//
// # Windows and noise
//
// A measurement window pools cohorts until it is conclusive: it shows a
// queue well above the target, or its own standard error (from the
// winsorized variance of its samples) is windowPrecision of the
// concurrency (at least one request), or it spans maxWindowCohorts
// cohorts: a sequential test, so that small, slow or heavy-tailed
// backends get longer windows and large, fast ones a single cohort. The
// queue estimate's error has two parts: the window's own, independent from
// one window to the next, and the baseline's, common to all windows until
// the baseline changes. The limiter keeps a smoothed variance of the
// first, noise; its margins are multiples of √(noise + baseline's): the
// queue it keeps at the backend (the target), what counts as a queue at
// all, how far below capacity a probe goes. (A probe only the capacity
// estimate's own standard error deep passed more cells of the simulation,
// but in the lab, whose latencies carry the machine's noise too, a probe
// that shallow sometimes still met a queue, the baseline crept up with
// it, and the limit settled 15–20 % above the slots.)
//
// # The baseline
//
// The baseline cannot be read off the windows: a limiter that keeps a few
// requests queued never sees a window without queue, and an estimator fed
// by its windows absorbs that queue (the limit then creeps up), while the
// lowest window is biased low by the noise (every window then reads as a
// queue and the limit sinks). Four sources keep it true:
//
//   - Start-up: the first tickets were admitted as the limit filled, so
//     those up to startShare of the initial limit found free slots
//     whatever the capacity (as long as the initial limit is within
//     1/startShare of it). Their statistic is the first baseline, and
//     each next quarter of the start-up cohort joins it unless it reads
//     significantly higher (below the capacity, none does); the cohort's
//     upper half past them gives the first queue estimate, and the limit
//     moves to the capacity at once; a cohort with no queue at all moves
//     it to 1/startShare of the initial limit, the most capacity that
//     allows for (see Gradient).
//   - Probes (BBR's ProbeRTT): the limit drops below the estimated
//     capacity by a noise margin for one cohort; its requests found no
//     queue. The result is merged by inverse variance. Probes come every
//     probeMinEvery cohorts while the baseline is young and back off (up
//     to probeMaxEvery cohorts, 64 round trips) while they keep
//     confirming it. A probe that reads well above the baseline is held
//     in doubt (it may have met a capacity that just fell) and joins the
//     pool with the next probe merged, unless the capacity changed between
//     them: dropping it would censor the noise's upper tail and hold the
//     baseline low.
//   - Slower or fewer: a backend that gets slower lengthens every
//     request, which a window reads as a queue, so the limit would cut as
//     if slots were lost. Every change down (and every cut whose next
//     window's latency fell far less than the removed requests' wait,
//     (inflight before − after) / X, predicts: the slope check) is checked
//     by an urgent probe below the capacity the cut assumed, where a
//     queue would be gone. A probe at the baseline confirms the cut. A
//     probe well above it, whose spread grew with its level (a slowdown
//     scales every request, so the spread scales; a queue adds about the
//     same wait to each, so the spread stays; a probe of fewer than
//     minWindow requests is judged by its level), shows a slower backend:
//     its statistic becomes the baseline and the limit returns to where
//     it was before the cut (unless the window that cut, judged again
//     against the new baseline, still shows a queue: slots lost as well).
//     So a backend that gets 3× slower keeps its limit, which is the same
//     number of slots.
//   - A window significantly below the baseline shows a faster backend: a
//     queue cannot make requests faster. Its statistic becomes the
//     baseline; if the throughput grew with the speed (the same slots,
//     shorter requests), the capacity in requests stays, otherwise the
//     baseline was too high and the capacity moves with it.
//
// # Refusals
//
// A dropped request that failed faster than the baseline was refused
// (429 from a full node; the gateway retries a 429 on the other nodes
// first, so it is the backend's, not one node's): the backend was full at
// its concurrency, so the limit gets a ceiling one below it at once, and
// a probe above the limit ends there (a node that refuses queues nothing,
// so the probe's latency would read as room). The ceiling is also the
// safe level (see SafeLimiter): P0 and P1 hold no more places than it,
// and P2 explores above it. It is lifted
// by round trips at it, not by windows (those are sized for the estimate
// and span many round trips when the ceiling is far below it): two round
// trips' tickets without a refusal confirm it, and it rises by one, then
// doubles each round trip, until a refusal or the estimate. On a backend
// that answered 429 (a dead node's fast errors are refusals too, but not
// that), the latency's level is its speed, not a queue: while the ceiling
// holds, and in a slow start, each window's queue is measured from the
// last window's statistic (see queueBase). A window
// with more than dropShare drops (time-outs, errors) is congested
// whatever its latency.
type adaptive struct {
	limit   atomic.Int64             // the effective limit, read without mu
	safe    atomic.Int64             // the confirmed concurrency after refusals (see Safe); 0: none
	tickets atomic.Uint64            // tickets issued
	grants  *[grantRing]atomic.Int64 // grant times (UnixNano) by ticket mod grantRing
	now     func() time.Time         // fixed (tests set a virtual clock before use)

	mu         sync.Mutex
	cfg        LimiterConfig   // guarded by mu
	step       stepFunc        // fixed
	judged     windowStats     // guarded by mu; the window closeWindow is judging (see there)
	probed     windowStats     // guarded by mu; the probe endProbeUp is judging (see there)
	est        float64         // guarded by mu; the limit outside probes
	started    bool            // guarded by mu; the start-up cohort was judged
	restartUp  bool            // guarded by mu; the start-up cohort measured nothing (its first requests refused, dropped or not back): the next cohort is a start-up again
	ring       cohortRing      // guarded by mu; cohorts awaiting their requests
	win        window          // guarded by mu; the measurement window
	base       float64         // guarded by mu; the baseline statistic, seconds; 0 until known
	baseVar    float64         // guarded by mu; its variance, s²
	baseX      float64         // guarded by mu; the throughput when the baseline last moved, requests/s
	fastFrom   [2]float64      // guarded by mu; the baseline and throughput before a window that read the backend faster (its capacity kept in requests) became the baseline; cleared when the urgent probe it asked ends (zero: none)
	baseSW     float64         // guarded by mu; the baseline samples' winsorized deviation, seconds; 0: unknown
	noise      float64         // guarded by mu; smoothed variance of a window's own queue error, requests²
	x          float64         // guarded by mu; throughput, requests/s
	xCount     int             // guarded by mu; samples since xAt
	xAt        time.Time       // guarded by mu
	capEst     float64         // guarded by mu; the capacity estimate, requests (Gradient); 0 until observed
	capVar     float64         // guarded by mu; its variance
	climbVar   float64         // guarded by mu; the variance of the last climb's step, (step/2)², until a window weighs it (filter, or a change)
	climb      int             // guarded by mu; windows climbing in a row
	partial    bool            // guarded by mu; the window just judged held the slow start's last step only in part: last stays the step's reference
	climbWait  bool            // guarded by mu; the slow start just stepped: a window admitted mostly below the new limit waits for the next (once)
	slowStart  bool            // guarded by mu; the start-up's climb, no queue seen since the start: the queue's growth with each step ends it
	short      float64         // guarded by mu; CUSUM of the queue's shortfall below the target
	upOK       bool            // guarded by mu; a probe above the limit found room: the estimate may climb
	wantUp     bool            // guarded by mu; the shortfall asks a probe above the limit whether there is room
	ceil       float64         // guarded by mu; the limit's ceiling after a refusal; 0: none
	refusing   bool            // guarded by mu; the backend answered that it is full (Sample.Refused): it refuses at its capacity, queueing nothing (see queueBase)
	ceilAge    int             // guarded by mu; windows since the ceiling was set or a refusal renewed it
	ceilAt     uint64          // guarded by mu; the ticket count at which the ceiling lifts next
	cut        cutCheck        // guarded by mu; the slope check of the last cut
	probe      prober          // guarded by mu
	since      float64         // guarded by mu; cohorts judged in windows since the last probe below
	every      float64         // guarded by mu; cohorts between probes below now
	suspect    int             // guarded by mu; probes in a row that read above the baseline
	urgent     bool            // guarded by mu; a deep probe is due (see rebase)
	urgentLong bool            // guarded by mu; the urgent probe checks a cut under a refusal's ceiling: at least minWindow/4 requests
	kindOff    float64         // guarded by mu; plain calls' no-queue signal less streams' first tokens, seconds (see kinds.go)
	kindKnown  bool            // guarded by mu; kindOff was measured
	kindLevels [2]kindLevel    // guarded by mu; streams' and plain calls' pooled no-queue levels; kindOff is their difference
	kinds      kindLearner     // guarded by mu; the cohort kindOff is measured on
	sinceUp    float64         // guarded by mu; cohorts judged in windows since the last probe above the limit
	last       windowStats     // guarded by mu; the last conclusive window
	startWin   windowStats     // guarded by mu; the start-up's baseline tickets as a window, for the first window's slope test (see roomSinceLast)
	restore    float64         // guarded by mu; the limit to return to if it finds a slower baseline
	underCeil  float64         // guarded by mu; the refusal's ceiling that held the limit below the estimate when the cut came (0: none); the limit returns under it
	cutEst     float64         // guarded by mu; recent cohorts' cut (the slowest latency kept), seconds
	pool       basePool        // guarded by mu; the latest probes' samples
	held       basePool        // guarded by mu; the probes held in doubt since the last merge (suspect of them)
	scratch    [2]window       // guarded by mu; windows for one-off statistics
	swEst      float64         // guarded by mu; recent windows' winsorized deviation, seconds
	lastAt     time.Time       // guarded by mu; the last sample's arrival
	voidTo     uint64          // guarded by mu; cohorts with tickets below it are not judged (see voidWindows)
	ceilPeak   int             // guarded by mu; the most requests in flight a sample saw since the ceiling last lifted (see liftCeil)
	asked      int             // guarded by mu; times the urgent probe's question was asked again (see askAgain); while > 0 the windows leave the estimate alone
	asking     basePool        // guarded by mu; the samples of the question's earlier probes
	climbBuf   [2]climbSamples // guarded by mu; while the slow start climbs, the samples of last (climbBuf[climbAt]) and of the window just closed (see poolClimbRef)
	climbAt    int             // guarded by mu; which of climbBuf holds last's samples
	refBelow   bool            // guarded by mu; the slow start's step showed climbBuf[climbAt] below the capacity: pool it
	stepAt     uint64          // guarded by mu; the first ticket admitted after the slow start's last step
	slowerRef  slowerProbe     // guarded by mu; the urgent probe that read the backend slower, until the next probe below ends (limit 0: none)
	jump       jumpCheck       // guarded by mu; the start-up's jump, judged by the throughput (see jumpCheck)
	done       uint64          // guarded by mu; calls completed (not refused), ever
	released   uint64          // guarded by mu; samples released, ever: tickets − released are in flight
	sawStream  bool            // guarded by mu; a stream's first token was reported (see OnLatency)
}

// stepFunc returns the limit after a conclusive window in steady state.
type stepFunc func(a *adaptive, s *windowStats) float64

// Dimensionless constants of the estimator. None is a time, a rate or a
// sample count sized for a workload.
const (
	// maxCohort bounds a cohort's tickets (buffers are fixed: no
	// allocation per sample); a higher limit spans several cohorts a
	// round trip.
	maxCohort = 512
	// cohortShare: a cohort's tickets as a share of the limit (a round
	// trip's worth is the limit).
	cohortShare = 0.5
	// numCohorts: cohorts awaiting their requests at once.
	numCohorts = 16
	// stampEvery: one ticket in stampEvery has its grant time noted;
	// grantRing: the stamps kept (the tickets of the ring's cohorts).
	stampEvery = 8
	grantRing  = numCohorts * maxCohort / stampEvery
	// cutMargin: a cohort is judged once its pending requests have been
	// out longer than cutMargin × the recent cut (so they are slower than
	// every request its statistic keeps).
	cutMargin = 1.25
	// minWindow: the fewest samples a window judges by: a trimmed mean of
	// fewer is biased (high, for a right-skewed service time) by several
	// per cent, and noisy, whatever the workload.
	minWindow = 32
	// maxBase bounds the probe samples pooled into the baseline;
	// poolProbes: the latest probes pooled.
	maxBase    = 2048
	poolProbes = 6
	// maxWindow bounds a window's samples.
	maxWindow = 2048
	// windowPrecision: a window is precise enough when its own queue
	// error is this share of the concurrency (or one request).
	windowPrecision = 0.04
	// maxWindowCohorts: the longest window, in cohorts (half round trips).
	maxWindowCohorts = 8
	// targetZ: the target queue in standard errors of the queue estimate:
	// enough that the queue stays visible (see visibleZ), so that every
	// window measures the capacity.
	targetZ = 2.0
	// visibleZ: a queue estimate more than this many standard errors
	// above 0 shows a queue.
	visibleZ = 1.0
	// congestionZ: a queue more than this many standard errors above the
	// target is congestion.
	congestionZ = 2.0
	// noiseWeight: the EWMA weight of a window in noise.
	noiseWeight = 1.0 / 8
	// dropShare: a window with more dropped samples than this share is
	// congested whatever its latency.
	dropShare = 0.05
	// slopeShare: a window after a cut whose latency fell by less than this
	// share of what the removed queue predicts shows a slower backend.
	slopeShare = 0.5
	// Probe schedule, in cohorts (half round trips): the first come every
	// probeMinEvery, the interval doubles while probes confirm the
	// baseline (up to probeMaxEvery) and resets when one moves it. A probe
	// below costs the calls it keeps out while the queue drains; one every
	// 128 cohorts of a confirmed baseline met more of the matrix's cells
	// than one every 64 (seeds 1–3: 935 against 927, seeds 4–7: 1,209
	// against 1,201, no criterion met less often; 256 met the same cells
	// as 128).
	probeMinEvery = 8
	probeMaxEvery = 128
	// probeRejects: probes in a row that read above the baseline before one
	// is believed (the backend got slower; before that, the probe may have
	// run above a capacity that just fell).
	probeRejects = 2
	// maxAsk: times an urgent probe that neither confirms nor overturns
	// the cut before it is asked again (see askAgain).
	maxAsk = 2
	// probeForget grows the baseline's variance before a probe is merged
	// in, so that it remembers about 1/(probeForget−1) probes.
	probeForget = 1.1
	// probeUpEvery: cohorts (half round trips) between probes above the
	// limit, while demand fills it, nothing was refused and no queue shows
	// (see dueUp): capacity that came back (a node, slots) is found within
	// a few round trips (probeUpEvery cohorts are 4), as BBR's bandwidth
	// probe every 8 round trips finds it. A probe above the limit costs a
	// round trip or two of a small queue. upSkipMax: while a queue shows,
	// one runs every upSkipMax × probeUpEvery cohorts all the same (a
	// queue read from a baseline that sits low is not there).
	probeUpEvery = 8
	upSkipMax    = 4
	// upShare: a probe above the limit adds this share of it (at least
	// two requests and two standard errors of the queue estimate).
	upShare = 0.1
	// startClimb: after the start-up's jump the slow start climbs as if
	// startClimb windows had already: each step is the largest a climb
	// takes (maxClimb; see Gradient).
	startClimb = 3
	// startZ: a later quarter of the start-up cohort reads as queued when
	// its statistic is this many standard errors above the earlier
	// quarters'. A quarter is a small sample (a quarter of the initial
	// limit), its standard error itself uncertain: at 2, starts below the
	// capacity often read a queue that was not there.
	startZ = 3.0
	// startShare: the start-up cohort's tickets up to this share of the
	// initial limit give the first baseline.
	startShare = 0.25
	// stallGap: a gap between two samples longer than this many mean
	// intervals between completions (1/X, at the limit now: see
	// expectedRate) is a stall of the gateway
	// itself (a GC pause, a starved CPU; for Poisson completions its odds
	// are e^−stallGap): the requests in flight through it measured the
	// stall, not the backend.
	stallGap = 12
	// minRate: the fewest completions a throughput update counts (its
	// relative error is about 1/√minRate).
	minRate = minWindow / 2
)
