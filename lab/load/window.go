package load

import (
	"maps"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/wire"
)

// Window is the generator's client-side view at one tick: counts since the
// previous Tick (the window) and since the start (…Total). Maps are fresh
// copies the caller owns; every outcome and priority has an entry.
type Window struct {
	Time     time.Time     // when the tick was taken
	Elapsed  time.Duration // since Run started (0 before)
	Duration time.Duration // length of the window: since the previous Tick, or since Run started

	TargetRPS   float64 // the rate asked for now (Rate())
	AchievedRPS float64 // Offered / Duration: arrivals actually scheduled in the window per second
	Outstanding int     // requests in flight now

	Offered      uint64 // arrivals in the window
	OfferedTotal uint64 // arrivals since the start
	// Attempts counts the attempts sent in the window, first ones and
	// retries (RetryPolicy); Retries the retries among them; the …Total
	// fields count since the start, RetriesDeniedTotal the retries the
	// retry budget refused.
	Attempts, Retries                               uint64
	AttemptsTotal, RetriesTotal, RetriesDeniedTotal uint64
	Outcomes                                        map[string]uint64 // outcomes that ended in the window, by name
	OutcomeTotal                                    map[string]uint64 // outcomes since the start, by name

	// AdmittedP50Ms and AdmittedP99Ms are the latency, from the intended
	// arrival time, of requests admitted by the gateway (that reached it and
	// were not shed) that ended in the window; 0 when none did.
	AdmittedP50Ms float64
	AdmittedP99Ms float64
	// AdmittedHist holds the same latencies (microseconds) as a sparse
	// copy of the window's histogram, so that windows can be merged into any
	// interval and give true percentiles; nil when none ended.
	AdmittedHist *hdrhistogram.PackedHistogram

	ByPriority map[string]PriorityWindow // keyed by priority name
	ByRoute    map[string]RouteWindow    // keyed by route name (AllRoutes)
}

// RouteWindow is one route in a Window: arrivals, and the requests that
// ended, in the window and since the start. Answered counts ok and
// fallback (an answer, degraded or not, within the client timeout).
type RouteWindow struct {
	Offered, Finished, Answered                uint64
	OfferedTotal, FinishedTotal, AnsweredTotal uint64
}

// PriorityWindow is one priority class in a Window.
type PriorityWindow struct {
	Offered       uint64 // arrivals in the window
	OK            uint64 // outcome ok, ended in the window
	Finished      uint64 // any outcome (generator_dropped included), ended in the window
	OfferedTotal  uint64
	OKTotal       uint64
	FinishedTotal uint64
	// PassedRateLimitTotal is the finished requests the gateway's rate
	// limit let through: every outcome but shed_ratelimit and
	// generator_dropped (the rate limit is the first defense).
	PassedRateLimitTotal uint64
	// ReferencePassedTotal is the finished requests Config.Reference's
	// exact limiter let through, of the same requests; 0 without one.
	ReferencePassedTotal uint64
	// P50Ms and P99Ms: latency from the intended arrival time of every sent
	// request of this class that ended in the window, whatever its outcome
	// (dropped arrivals excluded); 0 when none did.
	P50Ms float64
	P99Ms float64
	// Latency holds the same latencies (microseconds) as a sparse copy of
	// the window's histogram; nil when none ended.
	Latency *hdrhistogram.PackedHistogram
}

// Totals is the cumulative view since the start. Maps and histograms are
// copies the caller owns; every outcome and priority has an entry.
type Totals struct {
	Elapsed     time.Duration // since Run started
	TargetRPS   float64       // the rate asked for now
	AchievedRPS float64       // Offered / Elapsed
	Outstanding int

	Offered  uint64
	Outcomes map[string]uint64 // all outcomes, generator_dropped included
	// Attempts, Retries and RetriesDenied: see Window. ShedRetried counts
	// attempts the gateway shed that were retried: sheds the gateway
	// counted that are no request's outcome. Resent counts, among the
	// attempts and retries, the requests net/http wrote again on another
	// connection on its own, after the server closed a kept-alive one
	// without answering (it does so for a GET): the server got them, the
	// outcome is the resent one's.
	Attempts, Retries, RetriesDenied, ShedRetried, Resent uint64

	ByPriority map[string]PriorityTotals
	// ByRoute is keyed by route name (AllRoutes).
	ByRoute map[string]RouteTotals

	// Status counts the requests that got an HTTP answer, by its status
	// code (the last attempt's, under a retry policy); NoAnswer the sent
	// requests that got none, by cause: "client timeout", "connection
	// refused", "connection reset", "connection closed (EOF)" or the
	// transport's error (at most 16 causes, the rest under "other"). With
	// generator_dropped they add up to Offered once Run has returned. Both
	// are nil in a Tracker's Totals.
	Status   map[int]uint64
	NoAnswer map[string]uint64

	// Admitted holds the latency in microseconds, from the intended arrival
	// time, of every request the gateway admitted (that reached it and was
	// not shed).
	Admitted *hdrhistogram.Histogram
}

// PriorityTotals is one priority class in Totals.
type PriorityTotals struct {
	Offered  uint64
	Outcomes map[string]uint64
	// Latency holds the latency in microseconds, from the intended arrival
	// time, of every sent request of this class, whatever its outcome.
	Latency *hdrhistogram.Histogram
}

// RouteTotals is one route since the start.
type RouteTotals struct {
	Offered  uint64
	Outcomes map[string]uint64
}

// Unaccounted is offered minus the sum of outcomes: the requests still in
// flight while the generator runs, and 0 once Run has returned.
func (t Totals) Unaccounted() int64 {
	var sum uint64
	for _, n := range t.Outcomes {
		sum += n
	}
	return int64(t.Offered) - int64(sum)
}

func outcomeMap(c *[wire.NumOutcomes]uint64) map[string]uint64 {
	m := make(map[string]uint64, wire.NumOutcomes)
	for i := range wire.NumOutcomes {
		m[Outcomes[i]] = c[i]
	}
	return m
}

func sumOutcomes(c *[wire.NumOutcomes]uint64) uint64 {
	var s uint64
	for _, n := range c {
		s += n
	}
	return s
}

// window computes the Window at now and starts the next one. Elapsed
// counts from started to end (the stop of scheduling, or now); Duration
// from the previous window to now.
func (s *stats) window(now, end, started time.Time, target float64, outstanding int) Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := Window{Time: now, TargetRPS: target, Outstanding: outstanding}
	if !started.IsZero() {
		w.Elapsed = end.Sub(started)
		from := s.lastTickTime
		if from.IsZero() || from.Before(started) {
			from = started
		}
		w.Duration = now.Sub(from)
	}
	cur, prev := &s.total, &s.lastTick
	var delta [wire.NumOutcomes]uint64
	for i := range delta {
		delta[i] = cur.outcomes[i] - prev.outcomes[i]
	}
	w.Offered = cur.offered - prev.offered
	w.OfferedTotal = cur.offered
	w.Attempts, w.Retries = cur.attempts-prev.attempts, cur.retries-prev.retries
	w.AttemptsTotal, w.RetriesTotal, w.RetriesDeniedTotal = cur.attempts, cur.retries, cur.denied
	w.Outcomes = outcomeMap(&delta)
	w.OutcomeTotal = outcomeMap(&cur.outcomes)
	if w.Duration > 0 {
		w.AchievedRPS = float64(w.Offered) / w.Duration.Seconds()
	}
	w.AdmittedP50Ms = quantileMs(s.winAdmitted, 50)
	w.AdmittedP99Ms = quantileMs(s.winAdmitted, 99)
	w.AdmittedHist = packHist(s.winAdmitted)
	w.ByPriority = make(map[string]PriorityWindow, len(Priorities))
	for i, name := range Priorities {
		c, p := &cur.prio[i], &prev.prio[i]
		w.ByPriority[name] = PriorityWindow{
			Offered:       c.offered - p.offered,
			OK:            c.outcomes[wire.OutcomeOK] - p.outcomes[wire.OutcomeOK],
			Finished:      sumOutcomes(&c.outcomes) - sumOutcomes(&p.outcomes),
			OfferedTotal:  c.offered,
			OKTotal:       c.outcomes[wire.OutcomeOK],
			FinishedTotal: sumOutcomes(&c.outcomes),
			PassedRateLimitTotal: sumOutcomes(&c.outcomes) - c.outcomes[wire.OutcomeShedRateLimit] -
				c.outcomes[wire.OutcomeGeneratorDropped],
			ReferencePassedTotal: c.refPassed,
			P50Ms:                quantileMs(s.winPrio[i], 50),
			P99Ms:                quantileMs(s.winPrio[i], 99),
			Latency:              packHist(s.winPrio[i]),
		}
	}
	w.ByRoute = make(map[string]RouteWindow, len(AllRoutes))
	for i, r := range AllRoutes {
		c, p := &cur.route[i], &prev.route[i]
		answered := func(o *[wire.NumOutcomes]uint64) uint64 { return o[wire.OutcomeOK] + o[wire.OutcomeFallback] }
		w.ByRoute[string(r)] = RouteWindow{
			Offered: c.offered - p.offered, Finished: sumOutcomes(&c.outcomes) - sumOutcomes(&p.outcomes),
			Answered:     answered(&c.outcomes) - answered(&p.outcomes),
			OfferedTotal: c.offered, FinishedTotal: sumOutcomes(&c.outcomes), AnsweredTotal: answered(&c.outcomes),
		}
	}
	s.lastTick = s.total
	s.lastTickTime = now
	s.winAdmitted.Reset()
	for _, h := range s.winPrio {
		h.Reset()
	}
	return w
}

func (s *stats) totals(now, started time.Time, target float64, outstanding int) Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := Totals{TargetRPS: target, Outstanding: outstanding, Offered: s.total.offered,
		Attempts: s.total.attempts, Retries: s.total.retries, RetriesDenied: s.total.denied, ShedRetried: s.total.shedRetried,
		Resent: s.total.resent}
	if !started.IsZero() {
		t.Elapsed = now.Sub(started)
		if t.Elapsed > 0 {
			t.AchievedRPS = float64(t.Offered) / t.Elapsed.Seconds()
		}
	}
	t.Outcomes = outcomeMap(&s.total.outcomes)
	t.Status = maps.Clone(s.status)
	t.NoAnswer = maps.Clone(s.noAnswer)
	t.Admitted = copyHist(s.admitted)
	t.ByPriority, t.ByRoute = s.total.breakdown(s.prio)
	return t
}
