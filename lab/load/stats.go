package load

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/wire"
)

// Latencies are recorded in microseconds, from 1 µs to maxLatency; longer
// values are recorded as maxLatency (counted, never dropped).
const (
	minLatencyUs = 1
	maxLatencyUs = int64(10 * time.Minute / time.Microsecond)
	sigFigs      = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(minLatencyUs, maxLatencyUs, sigFigs)
}

func copyHist(h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	return hdrhistogram.Import(h.Export())
}

// packHist returns a sparse copy of h (same geometry), or nil when h is
// empty. It scans h's counts once.
func packHist(h *hdrhistogram.Histogram) *hdrhistogram.PackedHistogram {
	if h.TotalCount() == 0 {
		return nil
	}
	p := hdrhistogram.NewPacked(minLatencyUs, maxLatencyUs, sigFigs)
	p.MergeFrom(h)
	return p
}

func recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < minLatencyUs {
		us = minLatencyUs
	}
	if us > maxLatencyUs {
		us = maxLatencyUs
	}
	_ = h.RecordValue(us) // cannot fail: us is within the trackable range
}

// quantileMs returns the q-th percentile (0..100) of h in milliseconds, 0 when
// h is empty.
func quantileMs(h *hdrhistogram.Histogram, q float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return float64(h.ValueAtQuantile(q)) / 1000
}

// counters are the plain counts; a Window is the difference of two.
type counters struct {
	offered     uint64
	attempts    uint64 // attempts sent, first ones and retries
	retries     uint64 // attempts after the first
	denied      uint64 // retries the retry budget refused
	resent      uint64 // retries net/http sent on its own (sent.resent), among retries
	shedRetried uint64 // attempts shed by the gateway and then retried (not an outcome)
	outcomes    [wire.NumOutcomes]uint64
	prio        [3]struct {
		offered   uint64
		outcomes  [wire.NumOutcomes]uint64
		refPassed uint64 // finished requests Config.Reference let through
	}
	route [NumRoutes + 1]struct { // by routeIndex; the last: unknown
		offered  uint64
		outcomes [wire.NumOutcomes]uint64
	}
}

// breakdown returns c's counts by priority, each with its latency
// histogram copied from lat, and by route.
func (c *counters) breakdown(lat [3]*hdrhistogram.Histogram) (map[string]PriorityTotals, map[string]RouteTotals) {
	byPrio := make(map[string]PriorityTotals, len(Priorities))
	for i, name := range Priorities {
		byPrio[name] = PriorityTotals{
			Offered:  c.prio[i].offered,
			Outcomes: outcomeMap(&c.prio[i].outcomes),
			Latency:  copyHist(lat[i]),
		}
	}
	byRoute := make(map[string]RouteTotals, len(AllRoutes))
	for i, r := range AllRoutes {
		byRoute[string(r)] = RouteTotals{Offered: c.route[i].offered, Outcomes: outcomeMap(&c.route[i].outcomes)}
	}
	return byPrio, byRoute
}

// NumRoutes is the number of routes (len(AllRoutes)).
const NumRoutes = wire.NumLoadRoutes

// stats collects what happened to every offered request. All fields are
// guarded by mu.
type stats struct {
	mu sync.Mutex

	total counters

	// Cumulative histograms: admitted requests (that reached the server and
	// were not shed), and every sent request per priority.
	admitted *hdrhistogram.Histogram
	prio     [3]*hdrhistogram.Histogram

	// status counts the requests that got an HTTP answer by its status;
	// noAnswer the sent ones that got none by cause (sent.cause), at
	// most maxCauses causes, the rest under causeOther.
	status   map[int]uint64
	noAnswer map[string]uint64

	// trackers are the Trackers on now; the slice is replaced, never
	// changed in place, so a request may keep the one it was offered under.
	trackers []*Tracker

	// The window since the previous tick.
	lastTick     counters
	lastTickTime time.Time
	winAdmitted  *hdrhistogram.Histogram
	winPrio      [3]*hdrhistogram.Histogram
}

func newStats() *stats {
	s := &stats{admitted: newHist(), winAdmitted: newHist(),
		status: map[int]uint64{}, noAnswer: map[string]uint64{}}
	for i := range s.prio {
		s.prio[i] = newHist()
		s.winPrio[i] = newHist()
	}
	return s
}

// offer counts one arrival on route index r and returns its tags: one per
// Tracker on (nil when none is).
func (s *stats) offer(p priority, r int) []tag {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.offered++
	s.total.prio[p].offered++
	s.total.route[r].offered++
	if len(s.trackers) == 0 {
		return nil
	}
	tags := make([]tag, len(s.trackers))
	for i, t := range s.trackers {
		tags[i] = t.offerLocked(p, r)
	}
	return tags
}

// attempt counts one attempt sent (a retry when retry is set) of a
// request tagged by offer.
func (s *stats) attempt(_ priority, retry bool, tags []tag) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.attempts++
	if retry {
		s.total.retries++
	}
	for _, t := range s.trackers {
		if c := t.countedLocked(epochOf(tags, t)); c != nil {
			c.attempts++
			if retry {
				c.retries++
			}
		}
	}
}

// resent counts n attempts net/http resent on its own (sent.resent) of a
// request tagged by offer: attempts and retries the server got.
func (s *stats) resent(n int, tags []tag) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.attempts += uint64(n)
	s.total.retries += uint64(n)
	s.total.resent += uint64(n)
	for _, t := range s.trackers {
		if c := t.countedLocked(epochOf(tags, t)); c != nil {
			c.attempts += uint64(n)
			c.retries += uint64(n)
			c.resent += uint64(n)
		}
	}
}

// shedRetried counts an attempt the gateway shed (as o) that is being
// retried: the gateway counted the shed, the request goes on.
func (s *stats) shedRetried(o wire.Outcome, tags []tag) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.shedRetried++
	for _, t := range s.trackers {
		t.shedRetriedLocked(epochOf(tags, t), o)
	}
}

// retryDenied counts a retry the budget refused.
func (s *stats) retryDenied(tags []tag) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.denied++
	for _, t := range s.trackers {
		if c := t.countedLocked(epochOf(tags, t)); c != nil {
			c.denied++
		}
	}
}

// maxCauses bounds the distinct causes Totals.NoAnswer holds; the rest are
// counted under causeOther.
const (
	maxCauses  = 16
	causeOther = "other"
)

// finish records the one outcome of an offered request (on route index r,
// tagged by offer; a.outcome, its HTTP status or the cause of having none)
// and, unless it was never sent, its latency from the
// intended arrival time: among the admitted latencies only when it reached
// the server (an error before it did, such as a refused connection, was
// admitted by no gateway). refPassed: the reference limiter
// (Config.Reference) let it through.
func (s *stats) finish(p priority, r int, a sent, latency time.Duration, refPassed bool, tags []tag) {
	o, reached := a.outcome, a.reached
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case o == wire.OutcomeGeneratorDropped:
	case a.status != 0:
		s.status[a.status]++
	default:
		c := a.cause
		if c == "" {
			c = causeOther
		}
		if _, ok := s.noAnswer[c]; !ok && len(s.noAnswer) >= maxCauses {
			c = causeOther
		}
		s.noAnswer[c]++
	}
	s.total.outcomes[o]++
	s.total.prio[p].outcomes[o]++
	if refPassed {
		s.total.prio[p].refPassed++
	}
	s.total.route[r].outcomes[o]++
	for _, t := range s.trackers {
		t.endLocked(epochOf(tags, t), p, r, o, reached, latency)
	}
	if o == wire.OutcomeGeneratorDropped {
		return
	}
	recordLatency(s.prio[p], latency)
	recordLatency(s.winPrio[p], latency)
	if o.Admitted() && reached {
		recordLatency(s.admitted, latency)
		recordLatency(s.winAdmitted, latency)
	}
}
