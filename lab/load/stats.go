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
	shedRetried uint64 // attempts shed by the gateway and then retried (not an outcome)
	outcomes    [wire.NumOutcomes]uint64
	prio        [3]struct {
		offered  uint64
		outcomes [wire.NumOutcomes]uint64
	}
}

// stats collects what happened to every offered request. All fields are
// guarded by mu.
type stats struct {
	mu sync.Mutex

	total counters

	// Cumulative histograms: admitted requests (sent and not shed), and every
	// sent request per priority.
	admitted *hdrhistogram.Histogram
	prio     [3]*hdrhistogram.Histogram

	// The window since the previous tick.
	lastTick     counters
	lastTickTime time.Time
	winAdmitted  *hdrhistogram.Histogram
	winPrio      [3]*hdrhistogram.Histogram
}

func newStats() *stats {
	s := &stats{admitted: newHist(), winAdmitted: newHist()}
	for i := range s.prio {
		s.prio[i] = newHist()
		s.winPrio[i] = newHist()
	}
	return s
}

// offer counts one arrival.
func (s *stats) offer(p priority) {
	s.mu.Lock()
	s.total.offered++
	s.total.prio[p].offered++
	s.mu.Unlock()
}

// attempt counts one attempt sent (a retry when retry is set).
func (s *stats) attempt(_ priority, retry bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.attempts++
	if retry {
		s.total.retries++
	}
}

// shedRetried counts an attempt the gateway shed that is being retried:
// the gateway counted the shed, the request goes on.
func (s *stats) shedRetried() {
	s.mu.Lock()
	s.total.shedRetried++
	s.mu.Unlock()
}

// retryDenied counts a retry the budget refused.
func (s *stats) retryDenied() {
	s.mu.Lock()
	s.total.denied++
	s.mu.Unlock()
}

// finish records the one outcome of an offered request and, unless it was
// never sent, its latency from the intended arrival time.
func (s *stats) finish(p priority, o wire.Outcome, latency time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.outcomes[o]++
	s.total.prio[p].outcomes[o]++
	if o == wire.OutcomeGeneratorDropped {
		return
	}
	recordLatency(s.prio[p], latency)
	recordLatency(s.winPrio[p], latency)
	if o.Admitted() {
		recordLatency(s.admitted, latency)
		recordLatency(s.winAdmitted, latency)
	}
}
