package sampler

import (
	"time"

	"github.com/levee-lab/levee/internal/decimal"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/lab/scrape"
)

// nodeState is one node's previous scrape, what it last reported of its
// configuration, its completion rate from its last two scrapes (carried over
// to ticks without a new scrape) and its service-time window.
type nodeState struct {
	prev   scrape.Families
	prevAt time.Time
	starts int
	cfg    nodeConfig
	rate   float64 // completions/s
	svc    serviceWindow
}

// nodeConfig is what a node last reported about its configuration.
type nodeConfig struct {
	slots, mean float64 // mean service time in seconds
	known       bool
}

// addNodes fills the nodes' view and the capacity line, and returns the
// nodes' completion rate and whether every live node had all its slots
// busy.
func (st *State) addNodes(smp *runfiles.Sample, in Input) (completions float64, saturated bool) {
	saturated = true
	live := 0
	for i, c := range in.Nodes {
		n := &st.nodes[i]
		if c.Starts != n.starts {
			*n = nodeState{starts: c.Starts, cfg: n.cfg, rate: n.rate}
		}
		f := c.Scrape
		ns := runfiles.NodeSample{Index: i, Addr: c.Addr, Up: c.Up && f != nil}
		if !c.Up {
			ns.RestartIn = round(c.RestartIn.Seconds(), 1)
		}
		switch {
		case f != nil:
			n.read(f, c.At, c.Started, in.Tick, &ns)
			completions += n.rate
			if ns.Slots <= 0 || ns.Busy < ns.Slots {
				saturated = false
			}
		case c.Up:
			saturated = false // a live node we could not read
		case n.cfg.known:
			ns.Slots = n.cfg.slots
		}
		if c.Up {
			live++
			capRPS, configured := n.capacity()
			smp.CapacityRPS += capRPS
			if configured {
				smp.CapacityConfiguredRPS += capRPS
			}
		}
		smp.Nodes = append(smp.Nodes, ns)
	}
	if live == 0 {
		saturated = false
	}
	smp.CapacityRPS = round(smp.CapacityRPS, 3)
	smp.CapacityConfiguredRPS = round(smp.CapacityConfiguredRPS, 3)
	return completions, saturated
}

// read takes the node's scrape f (taken at at, of a process started at
// started) into ns and, when it is a new scrape at least half a tick
// after the last one used (rateDue), updates the completion rate and
// service window.
func (n *nodeState) read(f scrape.Families, at, started time.Time, tick time.Duration, ns *runfiles.NodeSample) {
	ns.Busy = f.Sum(wire.MetricFakeInService, nil)
	ns.Queued = f.Sum(wire.MetricFakeQueued, nil)
	ns.Slots = f.Sum(wire.MetricFakeSlots, nil)
	if mean, ok := f.Max(wire.MetricFakeMeanService, nil); ok && mean > 0 {
		n.cfg = nodeConfig{slots: ns.Slots, mean: mean, known: true}
	}
	if !rateDue(at, n.prevAt, tick) {
		return
	}
	prev, since := sinceLast(n.prev, n.prevAt, f, at, started)
	n.rate = 0
	if since > 0 {
		n.rate = f.SumDelta(prev, wire.MetricFakeRequests, map[string]string{wire.LabelOutcome: wire.FakeOutcomeOK}) / since
	}
	n.svc.add(f.SumDelta(prev, wire.MetricFakeService+wire.SuffixSum, nil),
		f.SumDelta(prev, wire.MetricFakeService+wire.SuffixCount, nil))
	n.prev, n.prevAt = f, at
}

// capacity is a live node's slots / mean service time: observed over the
// last seconds when enough requests finished, else as configured (reported
// by the node), and then configured is true: an estimate, not a
// measurement; 0 while the node never reported its configuration.
func (n *nodeState) capacity() (rps float64, configured bool) {
	if !n.cfg.known {
		return 0, false
	}
	if m, ok := n.svc.mean(); ok {
		return n.cfg.slots / m, false
	}
	return n.cfg.slots / n.cfg.mean, true
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

// round is decimal.Round: a finite figure stays finite.
func round(v float64, digits int) float64 { return decimal.Round(v, digits) }
