package load

import (
	"context"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/wire"
)

// Before is the epoch of the requests offered before Track was called.
const Before = -1

// A Tracker follows the requests a running Generator offers, by the epoch
// they were offered in and the epoch they ended in. Epochs are numbered
// from 0 (from Track on); Mark starts the next one. A recording made while
// load runs uses it to count exactly the requests offered inside its
// window, whenever they end, and to tell which ones may fall on either side
// of a moment such as a scrape of the gateways' counters.
//
// All methods are safe for concurrent use.
type Tracker struct {
	s     *stats // its mu guards the fields below
	clock func() time.Time

	epoch    int         // the current epoch
	marks    []time.Time // marks[e]: when epoch e began
	counted  []bool      // counted[e]: requests offered in epoch e count in Totals
	closedAt time.Time   // when Close was called; zero while tracking
	before   int64       // requests offered before Track that have not ended
	pending  []int64     // pending[e]: requests offered in epoch e that have not ended
	cells    map[Cell]uint64
	total    counters // the counted requests
	admitted *hdrhistogram.Histogram
	prio     [3]*hdrhistogram.Histogram
	notify   chan struct{} // buffered(1): a request ended
}

// Cell is a number of requests offered in one epoch (Before for those
// offered before Track) that ended in another with one outcome — or, with
// Retried, of attempts the gateway shed (as Outcome) that were retried: a
// shed the gateway counted that is no request's outcome.
type Cell struct {
	Offered, Ended int
	Outcome        wire.Outcome
	Retried        bool
}

// tag marks a request offered while t tracked: it was offered in epoch.
type tag struct {
	t     *Tracker
	epoch int
}

// Track starts a Tracker: epoch 0 begins now, and its requests do not count
// in Totals (Mark(true) starts a counted epoch). Close it when done.
func (g *Generator) Track() *Tracker {
	t := &Tracker{
		s: g.stats, clock: g.clock.Now,
		cells: map[Cell]uint64{}, admitted: newHist(), notify: make(chan struct{}, 1),
	}
	for i := range t.prio {
		t.prio[i] = newHist()
	}
	s := g.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	t.marks, t.counted, t.pending = []time.Time{t.clock()}, []bool{false}, []int64{0}
	t.before = int64(s.total.offered - sumOutcomes(&s.total.outcomes))
	s.trackers = append(s.trackers[:len(s.trackers):len(s.trackers)], t) // never shares a backing array
	return t
}

// Mark starts a new epoch now and returns its number and start time. The
// requests offered in it count in Totals when counted is true.
func (t *Tracker) Mark(counted bool) (epoch int, at time.Time) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	at = t.clock()
	t.epoch++
	t.marks = append(t.marks, at)
	t.counted = append(t.counted, counted)
	t.pending = append(t.pending, 0)
	return t.epoch, at
}

// Wait returns nil once every request offered before epoch began (those
// offered before Track included) has ended, or ctx's error when it ends
// first. Each request ends within the generator's client timeout.
func (t *Tracker) Wait(ctx context.Context, epoch int) error {
	for {
		t.s.mu.Lock()
		n := t.before
		for e := 0; e < epoch && e < len(t.pending); e++ {
			n += t.pending[e]
		}
		t.s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.notify:
		}
	}
}

// Close stops tracking: requests offered or ended from now on are not
// counted. Totals and Cells keep what was counted.
func (t *Tracker) Close() {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !t.closedAt.IsZero() {
		return
	}
	t.closedAt = t.clock()
	kept := make([]*Tracker, 0, len(s.trackers))
	for _, o := range s.trackers {
		if o != t {
			kept = append(kept, o)
		}
	}
	s.trackers = kept
}

// Cells returns how many requests ended so far, by the epoch they were
// offered in, the epoch they ended in and their outcome.
func (t *Tracker) Cells() map[Cell]uint64 {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	out := make(map[Cell]uint64, len(t.cells))
	for k, v := range t.cells {
		out[k] = v
	}
	return out
}

// Totals returns the counted requests — those offered in the epochs marked
// counted — with their outcomes and latencies, whenever they ended.
// Elapsed is the time the counted epochs lasted (until now or Close),
// Outstanding the counted requests that have not ended yet.
func (t *Tracker) Totals() Totals {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	end := t.closedAt
	if end.IsZero() {
		end = t.clock()
	}
	tot := Totals{Offered: t.total.offered}
	for e, c := range t.counted {
		if !c {
			continue
		}
		until := end
		if e+1 < len(t.marks) {
			until = t.marks[e+1]
		}
		tot.Elapsed += until.Sub(t.marks[e])
		tot.Outstanding += int(t.pending[e])
	}
	if tot.Elapsed > 0 {
		tot.AchievedRPS = float64(tot.Offered) / tot.Elapsed.Seconds()
	}
	tot.Outcomes = outcomeMap(&t.total.outcomes)
	tot.Attempts, tot.Retries, tot.RetriesDenied, tot.ShedRetried = t.total.attempts, t.total.retries, t.total.denied, t.total.shedRetried
	tot.Resent = t.total.resent
	tot.Admitted = copyHist(t.admitted)
	tot.ByPriority, tot.ByRoute = t.total.breakdown(t.prio)
	return tot
}

// offerLocked counts a request of priority p on route index r offered
// now; s.mu held.
func (t *Tracker) offerLocked(p priority, r int) tag {
	t.pending[t.epoch]++
	if t.counted[t.epoch] {
		t.total.offered++
		t.total.prio[p].offered++
		t.total.route[r].offered++
	}
	return tag{t: t, epoch: t.epoch}
}

// epochOf is the epoch a request tagged tags was offered in under t
// (Before when it was offered before t began).
func epochOf(tags []tag, t *Tracker) int {
	for _, tg := range tags {
		if tg.t == t {
			return tg.epoch
		}
	}
	return Before
}

// countedLocked is the counters a request offered in epoch counts in, or
// nil when that epoch is not counted; s.mu held.
func (t *Tracker) countedLocked(epoch int) *counters {
	if epoch == Before || !t.counted[epoch] {
		return nil
	}
	return &t.total
}

// shedRetriedLocked counts an attempt of a request offered in epoch that
// the gateway shed as o and that is retried; s.mu held.
func (t *Tracker) shedRetriedLocked(epoch int, o wire.Outcome) {
	t.cells[Cell{Offered: epoch, Ended: t.epoch, Outcome: o, Retried: true}]++
	if c := t.countedLocked(epoch); c != nil {
		c.shedRetried++
	}
}

// endLocked counts the end of a request offered in epoch (Before: before
// Track); s.mu held.
func (t *Tracker) endLocked(epoch int, p priority, r int, o wire.Outcome, reached bool, latency time.Duration) {
	if epoch == Before {
		t.before--
	} else {
		t.pending[epoch]--
	}
	t.cells[Cell{Offered: epoch, Ended: t.epoch, Outcome: o}]++
	if epoch != Before && t.counted[epoch] {
		t.total.outcomes[o]++
		t.total.prio[p].outcomes[o]++
		t.total.route[r].outcomes[o]++
		if o != wire.OutcomeGeneratorDropped {
			recordLatency(t.prio[p], latency)
			if o.Admitted() && reached {
				recordLatency(t.admitted, latency)
			}
		}
	}
	select {
	case t.notify <- struct{}{}:
	default:
	}
}
