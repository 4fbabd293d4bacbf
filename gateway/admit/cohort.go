package admit

import (
	"math"
	"slices"
)

// Cohort kinds.
const (
	cohortRound = iota // a round trip at the limit
	cohortProbe        // a probe's requests
	cohortStart        // the start-up cohort
	cohortUp           // a probe above the limit
)

// cohort gathers the samples of consecutive tickets [from, to).
type cohort struct {
	from, to uint64
	kind     int
	got      int // samples back, measured or not
	n        int // measured samples
	drops    int
	sumInfl  float64
	maxInfl  int
	lat      [maxCohort]float64 // by ticket offset; NaN until back, unmeasured, +Inf when dropped
	infl     [maxCohort]int32   // by ticket offset: in flight at its grant
	plain    [maxCohort]bool    // by ticket offset: a plain call (its signal is its RTT), beside streams' first tokens
	off      float64            // the plain calls' offset (see adaptive.kindOff)
}

// value returns ticket i's latency signal as the statistics read it: a
// plain call's less the offset that makes it read like a first token.
// Sentinels (NaN, unmeasured, +Inf) are returned as they are.
func (c *cohort) value(i int) float64 {
	v := c.lat[i]
	if c.plain[i] && v >= 0 && !math.IsInf(v, 1) {
		v -= c.off
	}
	return v
}

func (c *cohort) reset(from, to uint64, kind int) {
	c.from, c.to, c.kind = from, to, kind
	c.got, c.n, c.drops, c.sumInfl, c.maxInfl, c.off = 0, 0, 0, 0, 0, 0
	for i := range c.size() {
		c.lat[i], c.plain[i] = math.NaN(), false
	}
}

func (c *cohort) size() int { return int(c.to - c.from) }

// plainShare returns the share of plain calls among the measured samples
// (0 when none).
func (c *cohort) plainShare() float64 {
	n, p := 0, 0
	for i := range c.size() {
		if v := c.lat[i]; v >= 0 && !math.IsInf(v, 1) {
			n++
			if c.plain[i] {
				p++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(p) / float64(n)
}

// unmeasured marks a ticket that came back without a measurement.
const unmeasured = -1.0

// cut returns the slowest latency among the cohort's fastest keep share
// (counting its tickets not back as slower than all), 0 when fewer than
// that are back; buf is scratch.
func (c *cohort) cut(keep float64, buf []float64) float64 {
	n := 0
	for i := range c.size() {
		if v := c.lat[i]; !math.IsNaN(v) && v != unmeasured {
			buf[n] = c.value(i)
			n++
		}
	}
	k := int(keep*float64(c.size()) + 0.5)
	if k < 1 || n < k {
		return 0
	}
	slices.Sort(buf[:n])
	if math.IsInf(buf[k-1], 1) {
		return 0
	}
	return buf[k-1]
}

// youngestPending returns the offset of the cohort's last ticket not back,
// or −1.
func (c *cohort) youngestPending() int {
	for i := c.size() - 1; i >= 0; i-- {
		if math.IsNaN(c.lat[i]) {
			return i
		}
	}
	return -1
}

// cohortRing is a FIFO of cohorts in ticket order.
type cohortRing struct {
	c           [numCohorts]cohort
	head, count int
	frontier    uint64 // the end of the newest cohort ever pushed: the next one starts there
}

func (r *cohortRing) oldest() *cohort { return &r.c[r.head] }
func (r *cohortRing) newest() *cohort { return &r.c[(r.head+r.count-1)%numCohorts] }
func (r *cohortRing) pop()            { r.head, r.count = (r.head+1)%numCohorts, r.count-1 }
func (r *cohortRing) popNewest() {
	r.frontier = r.newest().from
	r.count--
}

// truncateNewest ends the newest cohort at ticket t.
func (r *cohortRing) truncateNewest(t uint64) {
	r.newest().to = t
	r.frontier = t
}

// push appends a cohort; the ring must not be full.
func (r *cohortRing) push(from, to uint64, kind int) *cohort {
	c := &r.c[(r.head+r.count)%numCohorts]
	r.count++
	c.reset(from, to, kind)
	r.frontier = to
	return c
}

// find returns the cohort holding ticket t, or nil.
func (r *cohortRing) find(t uint64) *cohort {
	for i := range r.count {
		c := &r.c[(r.head+i)%numCohorts]
		if t >= c.from && t < c.to {
			return c
		}
	}
	return nil
}
