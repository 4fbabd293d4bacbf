package upstream

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// EjectionState is a node's place in the outlier detector.
type EjectionState int32

// Ejection states; the numbers are the levee_upstream_ejection_state values.
const (
	InRotation EjectionState = 0
	Probing    EjectionState = 1
	Ejected    EjectionState = 2
)

func (s EjectionState) String() string {
	switch s {
	case InRotation:
		return wire.EjectionInRotation
	case Probing:
		return wire.EjectionProbing
	case Ejected:
		return wire.EjectionEjected
	}
	return "unknown"
}

// Ejection reasons (levee_upstream_ejections_total{reason}).
const (
	ReasonConsecutive = wire.EjectConsecutiveFailures
	ReasonFailureRate = wire.EjectFailureRate
	ReasonLatency     = wire.EjectLatency
	ReasonProbe       = wire.EjectProbeFailed
)

var ejectReasons = [...]string{ReasonConsecutive, ReasonFailureRate, ReasonLatency, ReasonProbe}

// minZ is how many standard errors a node's failure share must stand above
// its peers' before the failure-rate rule ejects it, so that a few unlucky
// failures in a small sample do not.
const minZ = 3.0

// ejection is one node's outlier state; guarded by outliers.mu.
type ejection struct {
	until     time.Time // ejected: when probing may start
	ejections int       // ejections in a row: the backoff exponent
	since     time.Time // in rotation: when the last forgiveness or return happened
	probeFrom time.Time // probing: when probation began
	probes    int       // probing: probe attempts in flight
	probeOK   int       // probing: probes that succeeded
	total     [len(ejectReasons)]uint64
}

// outliers is the pool's outlier detector (see OutlierConfig). Node states
// are read without the lock (node.ejection); every transition holds mu.
type outliers struct {
	cfg   OutlierConfig
	clock Clock
	nodes []*node
	on    atomic.Bool
	// nextEval is the clock time (UnixNano) of the next periodic check.
	nextEval atomic.Int64

	mu    sync.Mutex
	state []ejection // guarded by mu; parallel to nodes
	log   func(n *node, from, to EjectionState, reason string)
}

func newOutliers(cfg OutlierConfig, clock Clock, nodes []*node) *outliers {
	o := &outliers{cfg: cfg, clock: clock, nodes: nodes, state: make([]ejection, len(nodes))}
	now := clock.Now()
	for i := range o.state {
		o.state[i].since = now
	}
	o.nextEval.Store(now.Add(cfg.Interval).UnixNano())
	return o
}

func (o *outliers) index(n *node) int {
	for i, x := range o.nodes {
		if x == n {
			return i
		}
	}
	return -1
}

// setEnabled turns detection on or off; off returns every node to rotation.
func (o *outliers) setEnabled(on bool) {
	o.on.Store(on)
	if on {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.clock.Now()
	for i, n := range o.nodes {
		o.state[i] = ejection{since: now, total: o.state[i].total}
		o.set(n, InRotation, "")
	}
}

// current moves ejected nodes whose time is up to probing and returns n's
// state.
func (o *outliers) current(n *node) EjectionState {
	s := EjectionState(n.ejection.Load())
	if s != Ejected {
		return s
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	i := o.index(n)
	if now := o.clock.Now(); EjectionState(n.ejection.Load()) == Ejected && !now.Before(o.state[i].until) {
		o.state[i].probes, o.state[i].probeOK = 0, 0
		o.state[i].probeFrom = now
		o.set(n, Probing, "")
	}
	return EjectionState(n.ejection.Load())
}

// overdue appends to dst the nodes of probing that have been on
// probation for at least Interval: nodes a P0 call probes when no call of
// a lower priority did (with P0 traffic alone they would wait forever).
func (o *outliers) overdue(probing, dst []*node) []*node {
	if len(probing) == 0 {
		return dst
	}
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range probing {
		if i := o.index(n); EjectionState(n.ejection.Load()) == Probing && now.Sub(o.state[i].probeFrom) >= o.cfg.Interval {
			dst = append(dst, n)
		}
	}
	return dst
}

// takeProbe reserves a probe slot on a probing node.
func (o *outliers) takeProbe(n *node) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := o.index(n)
	if EjectionState(n.ejection.Load()) != Probing || o.state[i].probes+o.state[i].probeOK >= o.cfg.ProbeRequests {
		return false
	}
	o.state[i].probes++
	return true
}

// releaseProbe frees a probe slot whose attempt ended without a verdict.
func (o *outliers) releaseProbe(n *node) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := o.index(n)
	if o.state[i].probes > 0 {
		o.state[i].probes--
	}
}

// observe is called after every attempt with a verdict: consecutive is the
// node's failures in a row, probe whether the attempt held a probe slot.
func (o *outliers) observe(n *node, probe, failed bool, consecutive int) {
	if !o.on.Load() {
		return
	}
	now := o.clock.Now()
	if probe {
		o.mu.Lock()
		i := o.index(n)
		st := &o.state[i]
		if st.probes > 0 {
			st.probes--
		}
		if EjectionState(n.ejection.Load()) == Probing {
			if failed {
				o.ejectLocked(i, now, ReasonProbe, true)
			} else if st.probeOK++; st.probeOK >= o.cfg.ProbeRequests {
				st.since = now
				o.set(n, InRotation, "")
			}
		}
		o.mu.Unlock()
	} else if failed && consecutive >= o.cfg.ConsecutiveFailures && EjectionState(n.ejection.Load()) == InRotation {
		o.mu.Lock()
		if i := o.index(n); EjectionState(n.ejection.Load()) == InRotation && o.mayEjectLocked() {
			o.ejectLocked(i, now, ReasonConsecutive, false)
		}
		o.mu.Unlock()
	}
	o.maybeEvaluate(now)
}

// maybeEvaluate runs the periodic check when its time has come; one caller
// wins, the others return at once.
func (o *outliers) maybeEvaluate(now time.Time) {
	next := o.nextEval.Load()
	if now.UnixNano() < next || !o.nextEval.CompareAndSwap(next, now.Add(o.cfg.Interval).UnixNano()) {
		return
	}
	o.evaluate(now)
}

// mayEjectLocked reports whether one more node may leave rotation: fewer
// than MaxEjectionPercent (at least one) out, and another live node stays.
func (o *outliers) mayEjectLocked() bool {
	out, live := 0, 0
	for _, n := range o.nodes {
		switch EjectionState(n.ejection.Load()) {
		case InRotation:
			if n.up.Load() {
				live++
			}
		default:
			out++
		}
	}
	limit := max(1, int(math.Floor(o.cfg.MaxEjectionPercent/100*float64(len(o.nodes)))))
	return out < limit && live >= 2
}

// ejectLocked takes node i out of rotation; again says it failed its
// probation (no cap check: it was out already).
func (o *outliers) ejectLocked(i int, now time.Time, reason string, again bool) {
	st := &o.state[i]
	st.ejections++
	d := o.cfg.BaseEjectionTime
	for k := 1; k < st.ejections && d < o.cfg.MaxEjectionTime; k++ {
		d *= 2
	}
	st.until = now.Add(min(d, o.cfg.MaxEjectionTime))
	st.probes, st.probeOK = 0, 0
	for r, name := range ejectReasons {
		if name == reason {
			st.total[r]++
		}
	}
	n := o.nodes[i]
	n.stats.reset(now)
	o.set(n, Ejected, reason)
}

func (o *outliers) set(n *node, to EjectionState, reason string) {
	from := EjectionState(n.ejection.Swap(int32(to)))
	if from != to && o.log != nil {
		o.log(n, from, to, reason)
	}
}

// candidate is a node the periodic check found out of line.
type candidate struct {
	i        int
	reason   string
	severity float64 // how far out of line, for ordering
}

// evaluate compares every node in rotation with its peers and ejects the
// worst offenders the cap allows; it also forgives old ejections.
func (o *outliers) evaluate(now time.Time) {
	if !o.on.Load() {
		return
	}
	type view struct {
		ok, failed int
		classes    []string
		live       bool
	}
	views := make([]view, len(o.nodes))
	for i, n := range o.nodes {
		v := &views[i]
		v.live = n.up.Load() && EjectionState(n.ejection.Load()) == InRotation
		if v.live {
			v.ok, v.failed = n.stats.counts(now)
			v.classes = n.stats.classNames()
		}
	}
	minReq := o.cfg.MinRequests
	var cands []candidate
	for i, n := range o.nodes {
		v := views[i]
		if !v.live || v.ok+v.failed < minReq {
			continue
		}
		// Failure share against the peers' pooled share (two-proportion z).
		var pOK, pFail int
		for j, w := range views {
			if j != i && w.live {
				pOK += w.ok
				pFail += w.failed
			}
		}
		if pOK+pFail >= minReq {
			ni, np := float64(v.ok+v.failed), float64(pOK+pFail)
			fi, fp := float64(v.failed)/ni, float64(pFail)/np
			pooled := float64(v.failed+pFail) / (ni + np)
			se := math.Sqrt(pooled * (1 - pooled) * (1/ni + 1/np))
			if fi-fp >= o.cfg.FailureRateExcess && (se == 0 || (fi-fp)/se >= minZ) {
				cands = append(cands, candidate{i, ReasonFailureRate, 1 + fi - fp})
				continue
			}
		}
		// Median latency per class against the peers' merged median.
		for _, class := range v.classes {
			var own, peers latencyHist
			n.stats.latency(now, class, &own)
			if int(own.count) < minReq {
				continue
			}
			for j, w := range views {
				if j != i && w.live {
					o.nodes[j].stats.latency(now, class, &peers)
				}
			}
			if int(peers.count) < minReq {
				continue
			}
			mo, _ := own.quantile(0.5)
			mp, _ := peers.quantile(0.5)
			if mp > 0 && float64(mo) >= o.cfg.LatencyRatio*float64(mp) {
				cands = append(cands, candidate{i, ReasonLatency, float64(mo) / float64(mp)})
				break
			}
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].severity > cands[b].severity })
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range cands {
		if EjectionState(o.nodes[c.i].ejection.Load()) == InRotation && o.mayEjectLocked() {
			o.ejectLocked(c.i, now, c.reason, false)
		}
	}
	for i, n := range o.nodes {
		st := &o.state[i]
		if EjectionState(n.ejection.Load()) == InRotation && st.ejections > 0 && now.Sub(st.since) >= o.cfg.BaseEjectionTime {
			st.ejections--
			st.since = now
		}
	}
}

// totals returns node i's ejections by reason (ejectReasons order).
func (o *outliers) totals(i int) [len(ejectReasons)]uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.state[i].total
}
