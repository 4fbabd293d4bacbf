package upstream

import (
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// maxClasses bounds the call classes a node keeps latency windows for;
// calls of further classes share otherClass.
const (
	maxClasses   = 16
	otherClass   = wire.CallOther
	defaultClass = wire.CallDefault
)

// outcomeCount is one bucket of a node's attempt outcomes.
type outcomeCount struct{ ok, failed uint32 }

// nodeStats is what a node's recent attempts looked like: outcomes over
// the outlier window, failures in a row, and latency per call class. All
// fields are guarded by mu.
type nodeStats struct {
	mu          sync.Mutex
	outcomes    timeRing[outcomeCount]
	consecutive int
	classes     map[string]*latencyWindow
	latSpan     time.Duration
}

func newNodeStats(outlierSpan, latencySpan time.Duration, now time.Time) *nodeStats {
	return &nodeStats{
		outcomes: newTimeRing[outcomeCount](10, outlierSpan, now),
		classes:  map[string]*latencyWindow{},
		latSpan:  latencySpan,
	}
}

// record adds one attempt outcome; latency > 0 also adds a latency sample
// for class. It returns the failures in a row after it.
func (s *nodeStats) record(now time.Time, class string, failed bool, latency time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.outcomes.at(now)
	if failed {
		b.failed++
		s.consecutive++
	} else {
		b.ok++
		s.consecutive = 0
	}
	if latency > 0 {
		w, ok := s.classes[class]
		if !ok {
			if len(s.classes) >= maxClasses {
				class = otherClass
				w = s.classes[class]
			}
			if w == nil {
				w = newLatencyWindow(s.latSpan, now)
				s.classes[class] = w
			}
		}
		w.add(now, latency)
	}
	return s.consecutive
}

// counts returns the attempts that succeeded and failed over the window.
func (s *nodeStats) counts(now time.Time) (ok, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes.roll(now)
	for _, b := range s.outcomes.buckets {
		ok += int(b.ok)
		failed += int(b.failed)
	}
	return ok, failed
}

// latency merges the node's latency window for class into dst.
func (s *nodeStats) latency(now time.Time, class string, dst *latencyHist) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.classes[class]
	if !ok && len(s.classes) >= maxClasses {
		w, ok = s.classes[otherClass]
	}
	if ok {
		w.sum(now, dst)
	}
}

// classNames lists the classes the node has latency windows for.
func (s *nodeStats) classNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.classes))
	for c := range s.classes {
		out = append(out, c)
	}
	return out
}

// reset forgets outcomes, the failure run and latencies (a node that was
// ejected starts afresh).
func (s *nodeStats) reset(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes.reset(now)
	s.consecutive = 0
	clear(s.classes)
}
