package admit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/levee-lab/levee/gateway/upstream"
)

// The simulation: a deterministic, seeded discrete-event model of the lab
// in virtual time (nothing sleeps, no wall clock): open-loop Poisson
// arrivals with priorities and client deadlines, one or more gateways each
// with its own Limiter and the real Bulkhead priority queue (driven through
// acquireAsync), least-outstanding balancing (upstream.LeastOutstanding)
// with a retry budget (upstream.RetryBudget on a virtual clock) for
// requests on a node that dies and for 429s (retried on a node not tried
// yet, like the gateway's retry_on), and model nodes with slots, lognormal
// service time, and a FIFO queue or 429s beyond their slots. Capacity
// changes mid-run: a node lost and back, service time ×3 and back, slots
// cut to ¼ and back.

// simCell is one workload.
type simCell struct {
	Mean     float64 // mean service time, seconds (streams: of the time to first token)
	Sigma    float64 // lognormal sigma of the service time
	Nodes    int
	Slots    int     // per node
	Node0    float64 // node 0's slots × Slots (0: as the others); node 0 is the one a loss takes
	Reject   bool    // a full node answers 429 at once (else it queues, FIFO)
	Offered  float64 // arrival rate × the initial capacity
	Initial  float64 // initial limit × the true capacity (each gateway: its share)
	Gateways int
	Mix      [NumPriorities]float64
	Change   string  // "", "loss", "slow" (service ×3), "slots" (slots ÷ 4), "stall" (the gateways freeze now and then)
	ChangeAt float64 // mean service times from the start to the change (0: simFirstPhase, once the start-up settled)
	Stream   bool    // streams: TTFT + max_tokens 16–1024 at Mean/50 per token
	RTTOnly  bool    // streams judged by their whole RTT instead of the TTFT
	Mixed    bool    // streams mixed with plain calls (simPlainLength × a first token), judged by their RTT: P0 and simPlainShare of P1/P2 are plain (lesson 07's mix)
	Guard    bool    // each gateway has an overload guard (simGuard) before its bulkhead
	Seed     uint64
	Algo     string // gradient, aimd, static (the static limit is the true capacity)
}

// nodeSlots returns node i's slots.
func (c simCell) nodeSlots(i int) int {
	if i == 0 && c.Node0 > 0 {
		return max(1, int(c.Node0*float64(c.Slots)+0.5))
	}
	return c.Slots
}

// slotsWith returns the slots of the nodes, node 0 left out unless with0,
// each cut to a quarter when quarter.
func (c simCell) slotsWith(with0, quarter bool) int {
	n := 0
	for i := range c.Nodes {
		if i == 0 && !with0 {
			continue
		}
		sl := c.nodeSlots(i)
		if quarter {
			sl = max(1, sl/4)
		}
		n += sl
	}
	return n
}

func (c simCell) String() string {
	over := "queue"
	if c.Reject {
		over = "429"
	}
	s := fmt.Sprintf("mean=%s σ=%.2g %d×%d %s offered=%.1f× init=%.2g× gw=%d", fmtSeconds(c.Mean), c.Sigma, c.Nodes, c.Slots, over, c.Offered, c.Initial, c.Gateways)
	if c.Node0 > 0 {
		s += fmt.Sprintf(" node0=%d", c.nodeSlots(0))
	}
	if c.Change != "" {
		s += " change=" + c.Change
		if c.ChangeAt > 0 {
			s += fmt.Sprintf("@%g", c.ChangeAt)
		}
	}
	if c.Stream {
		s += " stream"
		if c.RTTOnly {
			s += "(rtt)"
		}
		if c.Mixed {
			s += "+plain"
		}
	}
	if c.Guard {
		s += " guard"
	}
	if c.Mix != defaultMix && c.Mix != ([NumPriorities]float64{}) {
		s += fmt.Sprintf(" mix=%.0f/%.0f/%.0f", 100*c.Mix[0], 100*c.Mix[1], 100*c.Mix[2])
	}
	return s
}

func fmtSeconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%gms", s*1000)
	}
	return fmt.Sprintf("%gs", s)
}

var defaultMix = [NumPriorities]float64{0.05, 0.25, 0.70}

// Workload settings an operator would choose knowing their model (not
// the limiter's: it knows none of them).
const (
	simDeadline     = 20  // client deadline, mean service times
	simQueueTimeout = 5   // bulkhead queue timeout, mean service times
	simQueueShare   = 2   // bulkhead queue size, × the gateway's share of the slots
	simPhase        = 50  // length of a phase, mean service times (of that phase)
	simFirstPhase   = 60  // the first phase (start-up from the initial limit)
	simTick         = 0.1 // the limit is sampled every simTick mean service times
	simTrail        = 5.0 // the settle test's trailing median, mean service times
	simSettleBand   = 0.15
	simSettleFloor  = 2.0   // requests: the band is ±15 % or ±2 requests
	simRefuseRTT    = 0.005 // a 429's round trip, mean service times
	simTokenShare   = 50.0  // streams: a token takes Mean/simTokenShare
	simStallEvery   = 10.0  // "stall": a gateway freeze every simStallEvery mean service times
	simStall        = 1.5   // of simStall mean service times (a GC pause or a starved CPU)
	simPlainShare   = 0.4   // Mixed: the share of P1/P2 calls that are plain (P0's are all)
	simPlainLength  = 2.0   // Mixed: a plain call's length ÷ a stream's time to first token
)

// simPhaseResult is what one phase (between capacity changes) measured.
type simPhaseResult struct {
	Truth    int     // live slots
	Mean     float64 // mean service time in the phase, seconds
	Settle   float64 // mean service times from the phase start until the limit settles; +Inf: never
	Fill     float64 // from the settle on (at least the phase's second half): the slot-time ok requests took ÷ the slot-time there was (Truth × the time)
	CV       float64 // the limit's coefficient of variation from the settle on
	MeanLim  float64 // the limit's mean from the settle on
	Duration float64 // seconds
}

// simResult is what one run measured.
type simResult struct {
	Cell      simCell
	Phases    []simPhaseResult
	Offered   [NumPriorities]int
	OK        [NumPriorities]int
	Outcomes  map[string]int
	Goodput   int     // ok over the whole run
	P99Ratio  float64 // admitted p99 (ok requests, arrival to answer) ÷ unloaded p99 (the service times drawn)
	P0Demand  float64 // P0's offered rate ÷ the smallest capacity of the run
	Unloaded  float64 // unloaded p99, seconds
	Trace     []float64
	TraceStep float64 // seconds between trace points
}

// P0 is the P0 success rate (1 when no P0 was offered).
func (r *simResult) P0() float64 {
	if r.Offered[P0] == 0 {
		return 1
	}
	return float64(r.OK[P0]) / float64(r.Offered[P0])
}

// worst returns the phase figures that matter: the highest settle time,
// the lowest fill, the highest CV.
func (r *simResult) worst() (settle, fill, cv float64) {
	fill = math.Inf(1)
	for _, p := range r.Phases {
		settle = math.Max(settle, p.Settle)
		fill = math.Min(fill, p.Fill)
		cv = math.Max(cv, p.CV)
	}
	return settle, fill, cv
}

// Event kinds.
const (
	evArrive = iota
	evDone
	evFirst
	evRefused
	evQueueTimeout
	evDeadline
	evPhase
	evTick
	evGwDone // the gateway takes in a finished request
	evAdmit  // the gateway takes in a request that arrived while it was frozen
	evStall  // the gateways freeze
	evGuard  // the guards evaluate
)

type simEvent struct {
	at   float64
	kind uint8
	id   int32  // request or phase index
	gen  uint32 // request generation (stale events are ignored)
	seq  uint64 // FIFO among equal times: determinism
}

// Request states.
const (
	rsFree = iota
	rsWaiting
	rsAtNode  // queued or served at a node, the gateway waits
	rsRefused // a 429 is on its way back
	rsZombie  // the client left; the node still works on it
)

type simReq struct {
	gen      uint32
	state    uint8
	prio     Priority
	gw       int
	node     int
	arrive   float64
	deadline float64
	work     float64 // service time at multiplier 1, seconds
	ttft     float64 // streams: the time to first token within work
	plain    bool    // Mixed: a plain call (its signal is its RTT)
	sent     float64 // when the upstream call started
	tried    uint32  // the nodes the call was sent to, a bit each
	started  float64 // when a node slot took it
	finished float64 // when the node finished it
	permit   Permit
	w        *waiter
}

type simNode struct {
	up    bool
	slots int
	busy  int
	mult  float64
	queue []int32
}

type simGateway struct {
	bh     *Bulkhead
	lor    upstream.LeastOutstanding
	budget *upstream.RetryBudget
	loads  []int64 // outstanding per node, this gateway's view
	guard  *Guard  // nil without Cell.Guard
}

type sim struct {
	cell      simCell
	mean      float64 // mean service time at multiplier 1, seconds
	mu        float64 // the service times' lognormal mu (draw)
	logTokens float64 // log(1024/16): streams' max_tokens are log-uniform (draw)
	now       float64
	seq       uint64
	events    simQueue
	reqs      []simReq
	free      []int32
	nodes     []simNode
	gws       []simGateway
	arrRNG    *rand.Rand // arrivals, priorities, gateway choice
	workRNG   *rand.Rand // service times
	decided   []*waiter  // waiters decided inside a bulkhead call
	res       simResult
	okAt      []float64    // completion times of ok requests (at the gateway)
	okServed  [][2]float64 // their slot time at the node, [started, finished)
	admitted  []float64    // arrival → answer of ok requests, seconds
	works     []float64    // service times drawn (unloaded distribution)
	lat       []float64    // limit trace
	latT      []float64    // its times
	phaseEnd  []float64
	frozen    float64 // the gateways are frozen until then
	spare     *waiter // a waiter no bulkhead holds, for the next acquisition
	// Requests by outcome, and P0's failures by outcome: res.Outcomes
	// once the run ends ("P0:" before the latter's names).
	outcomes, p0Failed [numOutcomes]int
}

// simOutcome is how a request ended; outcomeNames are the keys of
// simResult.Outcomes.
type simOutcome uint8

const (
	outOK simOutcome = iota
	outShedOverload
	outShedQueueFull
	outShedQueueTimeout
	outTimeout
	outError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "shed_overload", "shed_queue_full", "shed_queue_timeout", "timeout", "error"}

var debugSimCreated func(s *sim)

// runSim plays one cell.
func runSim(c simCell) (*simResult, error) {
	if c.Gateways < 1 {
		c.Gateways = 1
	}
	if c.Mix == ([NumPriorities]float64{}) {
		c.Mix = defaultMix
	}
	s := &sim{
		cell:    c,
		arrRNG:  rand.New(rand.NewPCG(c.Seed, 0x5eed0001)),
		workRNG: rand.New(rand.NewPCG(c.Seed, 0x5eed0002)),
	}
	if debugSimCreated != nil {
		debugSimCreated(s)
	}
	s.mean = c.Mean
	s.mu, s.logTokens = math.Log(c.Mean)-c.Sigma*c.Sigma/2, math.Log(1024.0/16)
	if c.Stream {
		s.mean = c.Mean + meanLogUniform(16, 1024)*c.Mean/simTokenShare
		if c.Mixed {
			plain := c.Mix[P0] + (1-c.Mix[P0])*simPlainShare
			s.mean = plain*simPlainLength*c.Mean + (1-plain)*s.mean
		}
	}
	s.res.Cell = c
	s.res.Outcomes = map[string]int{}
	truth := c.slotsWith(true, false)
	s.nodes = make([]simNode, c.Nodes)
	for i := range s.nodes {
		s.nodes[i] = simNode{up: true, slots: c.nodeSlots(i), mult: 1}
	}
	clock := upstream.ClockFunc(func() time.Time { return time.Unix(0, 0).Add(time.Duration(s.now * 1e9)) })
	for g := 0; g < c.Gateways; g++ {
		share := truth / c.Gateways
		if g < truth%c.Gateways {
			share++
		}
		lc := LimiterConfig{Algorithm: c.Algo, Limit: max(1, int(c.Initial*float64(share)+0.5)), Min: 1, Max: max(4*truth, 64)}
		if c.Algo == AlgoStatic {
			lc = LimiterConfig{Algorithm: AlgoStatic, Limit: max(1, share)}
		}
		bh, err := NewBulkhead(fmt.Sprintf("gw%d", g), BulkheadConfig{
			Limiter:      lc,
			QueueSize:    max(1, simQueueShare*share),
			QueueTimeout: time.Duration(simQueueTimeout * s.mean * 1e9),
		})
		if err != nil {
			return nil, err
		}
		if ad := adaptiveOf(bh.Limiter()); ad != nil {
			ad.now = clock.Now
		}
		s.gws = append(s.gws, simGateway{
			bh:     bh,
			budget: upstream.NewRetryBudget(upstream.RetryBudgetConfig{Ratio: 0.1, MinPerSecond: 1}, clock),
			loads:  make([]int64, c.Nodes),
		})
		if c.Guard {
			s.gws[g].guard = newSimGuard(&s.gws[g], float64(lc.Limit))
		}
	}
	if c.Guard {
		s.push(simEvent{at: 0, kind: evGuard})
	}
	// Phases: start, then the change and its reversal.
	first := float64(simFirstPhase)
	if c.ChangeAt > 0 {
		first = c.ChangeAt
	}
	durations := []float64{first * s.mean}
	mults := []float64{1}
	if c.Change != "" {
		m := 1.0
		if c.Change == "slow" {
			m = 3
		}
		durations = append(durations, simPhase*s.mean*m, simPhase*s.mean)
		mults = append(mults, m, 1)
	}
	t := 0.0
	for i, d := range durations {
		t += d
		s.phaseEnd = append(s.phaseEnd, t)
		if i > 0 {
			s.push(simEvent{at: t - d, kind: evPhase, id: int32(i)})
		}
	}
	end := t
	rate := c.Offered * float64(truth) / s.mean
	// Room for the run's arrivals and ticks (a few more than expected),
	// so the per-request records are not copied as they grow.
	want := int(1.05*rate*end) + 64
	ok := min(want, int(1.05*float64(truth)/s.mean*end)+64) // no more than the slots serve
	s.works, s.admitted, s.okAt = make([]float64, 0, want), make([]float64, 0, ok), make([]float64, 0, ok)
	s.okServed = make([][2]float64, 0, ok)
	ticks := int(end/(simTick*s.mean)) + 2
	s.lat, s.latT = make([]float64, 0, ticks), make([]float64, 0, ticks)
	s.push(simEvent{at: s.arrRNG.ExpFloat64() / rate, kind: evArrive})
	s.push(simEvent{at: 0, kind: evTick})
	if c.Change == "stall" {
		for k := 0.5; k < simPhase/simStallEvery; k++ {
			s.push(simEvent{at: s.phaseEnd[0] + k*simStallEvery*s.mean, kind: evStall})
		}
	}
	s.res.TraceStep = simTick * s.mean
	minCap := truth
	if c.Change == "loss" {
		minCap = c.slotsWith(false, false)
	} else if c.Change == "slots" {
		minCap = c.slotsWith(true, true)
	}
	s.res.P0Demand = c.Mix[P0] * rate * s.mean / float64(minCap)
	if c.Change == "slow" {
		s.res.P0Demand *= 3
	}

	for s.events.len() > 0 {
		ev := s.events.pop()
		if ev.at > end {
			break
		}
		s.now = ev.at
		switch ev.kind {
		case evArrive:
			s.arrive()
			s.push(simEvent{at: s.now + s.arrRNG.ExpFloat64()/rate, kind: evArrive})
		case evAdmit:
			s.admit(ev.id)
		case evTick:
			l := 0
			for i := range s.gws {
				l += tracedLimit(s.gws[i].bh.Limiter())
			}
			if debugTick != nil {
				debugTick(s)
			}
			s.lat = append(s.lat, float64(l))
			s.latT = append(s.latT, s.now)
			s.push(simEvent{at: s.now + simTick*s.mean*s.multNow(), kind: evTick})
		case evPhase:
			s.phase(int(ev.id))
		case evStall:
			s.frozen = s.now + simStall*s.mean
		case evGuard:
			for i := range s.gws {
				s.gws[i].guard.Evaluate(time.Unix(0, 0).Add(dur(s.now)))
			}
			s.push(simEvent{at: s.now + simGuardEvery, kind: evGuard})
		default:
			r := &s.reqs[ev.id]
			if r.gen != ev.gen {
				continue // stale
			}
			if s.now < s.frozen && ev.kind != evDone {
				// The gateway is frozen: it sees this when it thaws.
				ev.at = s.frozen
				s.push(ev)
				continue
			}
			switch ev.kind {
			case evDone:
				s.done(ev.id)
			case evGwDone:
				s.gwDone(ev.id)
			case evFirst:
				s.first(ev.id)
			case evRefused:
				s.refused(ev.id)
			case evQueueTimeout:
				s.giveUp(ev.id, outShedQueueTimeout)
			case evDeadline:
				s.giveUp(ev.id, outTimeout)
			}
		}
		s.flush()
	}
	s.finish(mults)
	return &s.res, nil
}

func (s *sim) push(e simEvent) {
	s.seq++
	e.seq = s.seq
	s.events.push(e)
}

func (s *sim) multNow() float64 { return s.nodes[0].mult }

func meanLogUniform(lo, hi float64) float64 { return (hi - lo) / math.Log(hi/lo) }

// draw returns a request's service time and its time to first token.
func (s *sim) draw() (work, ttft float64) {
	c := &s.cell
	ttft = math.Exp(s.mu + c.Sigma*s.workRNG.NormFloat64())
	if !c.Stream {
		return ttft, 0
	}
	tokens := 16 * math.Exp(s.workRNG.Float64()*s.logTokens)
	return ttft + tokens*c.Mean/simTokenShare, ttft
}

func (s *sim) newReq() int32 {
	if n := len(s.free); n > 0 {
		id := s.free[n-1]
		s.free = s.free[:n-1]
		return id
	}
	s.reqs = append(s.reqs, simReq{})
	return int32(len(s.reqs) - 1)
}

func (s *sim) retire(id int32, outcome simOutcome) {
	r := &s.reqs[id]
	s.outcomes[outcome]++
	s.res.Offered[r.prio]++
	if r.prio == P0 && outcome != outOK {
		s.p0Failed[outcome]++
		if debugSimP0 != nil {
			debugSimP0(s, id, outcomeNames[outcome])
		}
	}
	if outcome == outOK {
		s.res.OK[r.prio]++
		s.res.Goodput++
		s.okAt = append(s.okAt, s.now)
		s.okServed = append(s.okServed, [2]float64{r.started, r.finished})
		s.admitted = append(s.admitted, s.now-r.arrive)
	}
	r.gen++
	if r.state != rsZombie {
		r.state = rsFree
		s.free = append(s.free, id)
	}
}

func (s *sim) arrive() {
	c := &s.cell
	id := s.newReq()
	r := &s.reqs[id]
	u := s.arrRNG.Float64()
	p := P2
	if u < c.Mix[P0] {
		p = P0
	} else if u < c.Mix[P0]+c.Mix[P1] {
		p = P1
	}
	work, ttft := s.draw()
	*r = simReq{gen: r.gen, state: rsWaiting, prio: p, gw: s.arrRNG.IntN(len(s.gws)), arrive: s.now,
		deadline: s.now + simDeadline*s.mean*s.multNow(), work: work, ttft: ttft}
	if c.Mixed {
		r.plain = p == P0 || s.arrRNG.Float64() < simPlainShare
		if r.plain {
			// A plain call: a short answer, a little longer than a
			// stream's first token (lesson 07: p50 0.85 s beside 0.4 s).
			r.work, r.ttft = simPlainLength*ttft, 0
		}
	}
	s.works = append(s.works, r.work)
	if s.now < s.frozen {
		s.push(simEvent{at: s.frozen, kind: evAdmit, id: id, gen: r.gen})
		return
	}
	s.admit(id)
}

// admit takes a request into its gateway's bulkhead.
func (s *sim) admit(id int32) {
	r := &s.reqs[id]
	p := r.prio
	g := &s.gws[r.gw]
	if g.guard != nil && !g.guard.Admit(p) {
		s.retire(id, outShedOverload)
		return
	}
	w := s.newWaiter(p, id)
	pm, err, queued := g.bh.acquireAsync(w)
	s.placed(id, w, pm, err, queued)
}

// requeue gives back a refused request's place (smp: the refusal) and
// waits for another as the gateway does (see Bulkhead.Requeue); false:
// not requeued (nothing in flight, pay refused), the caller fails it.
func (s *sim) requeue(id int32, smp Sample, pay func() bool) bool {
	r := &s.reqs[id]
	g := &s.gws[r.gw]
	w := s.newWaiter(r.prio, id)
	pm, err, queued := g.bh.requeueAsync(w, &r.permit, smp, pay)
	if errors.Is(err, ErrNotRequeued) {
		s.spare = w
		return false
	}
	s.placed(id, w, pm, err, queued)
	return true
}

// placed acts on a request's acquisition: granted, queued or failed.
func (s *sim) placed(id int32, w *waiter, pm Permit, err error, queued bool) {
	r := &s.reqs[id]
	if !queued {
		// Not queued, so the bulkhead holds no reference to w: the next
		// acquisition takes it.
		s.spare = w
	}
	switch {
	case err != nil:
		s.retire(id, outShedQueueFull)
	case queued:
		r.w = w
		s.push(simEvent{at: s.now + simQueueTimeout*s.mean*s.multNow(), kind: evQueueTimeout, id: id, gen: r.gen})
		s.push(simEvent{at: max(r.deadline, s.now), kind: evDeadline, id: id, gen: r.gen})
	default:
		r.permit = pm
		s.push(simEvent{at: max(r.deadline, s.now), kind: evDeadline, id: id, gen: r.gen})
		s.send(id, false)
	}
}

// newWaiter returns a waiter for request id of priority p, the spare one
// if a bulkhead did not keep it (most are granted at once).
func (s *sim) newWaiter(p Priority, id int32) *waiter {
	w := s.spare
	if w == nil {
		return &waiter{prio: p, notify: s.onDecide, id: int(id)}
	}
	s.spare = nil
	*w = waiter{prio: p, notify: s.onDecide, id: int(id)}
	return w
}

// onDecide is called by a bulkhead (under its lock) when a waiter is
// granted or displaced; flush acts on it afterwards.
func (s *sim) onDecide(w *waiter) { s.decided = append(s.decided, w) }

func (s *sim) flush() {
	for len(s.decided) > 0 {
		w := s.decided[0]
		s.decided = s.decided[1:]
		id := int32(w.id)
		r := &s.reqs[id]
		if r.w != w {
			continue
		}
		r.w = nil
		g := &s.gws[r.gw]
		if w.err != nil {
			s.retire(id, outShedQueueFull)
			continue
		}
		r.permit = g.bh.permitOf(w)
		s.send(id, false)
	}
}

// send starts the upstream call of a granted request (retry: another
// attempt of it): least outstanding among the live nodes not tried yet.
func (s *sim) send(id int32, retry bool) {
	r := &s.reqs[id]
	g := &s.gws[r.gw]
	if !retry {
		g.budget.Deposit()
		r.sent, r.tried = s.now, 0
	}
	var cand [16]int
	var loads [16]int64
	n := 0
	for i := range s.nodes {
		if s.nodes[i].up && r.tried&(1<<i) == 0 {
			cand[n], loads[n] = i, g.loads[i]
			n++
		}
	}
	if n == 0 {
		// No node: an error, no sample for the limiter.
		r.permit.Release(Sample{})
		s.retire(id, outError)
		return
	}
	ni := cand[g.lor.Pick(loads[:n])]
	r.node = ni
	r.tried |= 1 << ni
	g.loads[ni]++
	r.state = rsAtNode
	nd := &s.nodes[ni]
	switch {
	case nd.busy < nd.slots:
		s.startService(id)
	case s.cell.Reject:
		r.state = rsRefused
		s.push(simEvent{at: s.now + simRefuseRTT*s.mean, kind: evRefused, id: id, gen: r.gen})
	default:
		nd.queue = append(nd.queue, id)
	}
}

func (s *sim) startService(id int32) {
	r := &s.reqs[id]
	nd := &s.nodes[r.node]
	nd.busy++
	r.started = s.now
	if debugWaits != nil {
		debugWaits[r.permit.ticket] = [2]float64{r.started - r.sent, r.work * nd.mult}
	}
	d := r.work * nd.mult
	r.ttft *= nd.mult
	s.push(simEvent{at: s.now + d, kind: evDone, id: id, gen: r.gen})
	if s.byTTFT(r) {
		s.push(simEvent{at: s.now + r.ttft, kind: evFirst, id: id, gen: r.gen})
	}
}

// byTTFT reports whether r's signal is its time to first token.
func (s *sim) byTTFT(r *simReq) bool { return s.cell.Stream && !s.cell.RTTOnly && !r.plain }

// first: a stream's first token reached the gateway.
func (s *sim) first(id int32) {
	r := &s.reqs[id]
	if r.state == rsAtNode {
		r.permit.Observe(dur(s.now - r.sent))
	}
}

// done: a node finished a request.
func (s *sim) done(id int32) {
	r := &s.reqs[id]
	ni := r.node
	nd := &s.nodes[ni]
	nd.busy--
	r.finished = s.now
	s.nextAt(ni)
	if r.state == rsZombie {
		r.gen++
		r.state = rsFree
		s.free = append(s.free, id)
		return
	}
	if s.now < s.frozen {
		s.push(simEvent{at: s.frozen, kind: evGwDone, id: id, gen: r.gen})
		return
	}
	s.gwDone(id)
}

// gwDone: the gateway takes in a finished request.
func (s *sim) gwDone(id int32) {
	r := &s.reqs[id]
	if r.state == rsZombie {
		r.gen++
		r.state = rsFree
		s.free = append(s.free, id)
		return
	}
	ni := r.node
	g := &s.gws[r.gw]
	g.loads[ni]--
	smp := Sample{RTT: dur(s.now - r.sent)}
	if s.byTTFT(r) {
		smp.Latency = dur(r.started - r.sent + r.ttft)
	}
	r.permit.Release(smp)
	s.retire(id, outOK)
}

// nextAt starts queued requests on node ni while it has free slots.
func (s *sim) nextAt(ni int) {
	nd := &s.nodes[ni]
	for nd.up && nd.busy < nd.slots && len(nd.queue) > 0 {
		id := nd.queue[0]
		nd.queue = nd.queue[1:]
		s.startService(id)
	}
}

// refused: a 429 came back. Like the gateway (upstream retry_on "429"),
// the call is retried on a node not tried yet while its gateway's retry
// budget allows (P0 keeps its reserve of it); the limiter sees the call's
// one outcome: a refusal only when no node took it.
func (s *sim) refused(id int32) {
	r := &s.reqs[id]
	g := &s.gws[r.gw]
	g.loads[r.node]--
	if simRetry429 && s.untried(r) && g.budget.TryWithdraw(int(r.prio)) {
		s.send(id, true)
		return
	}
	smp := Sample{RTT: dur(s.now - r.sent), Dropped: true, Refused: true}
	if simRequeue429 && s.now < r.deadline && (!simRequeuePaid || g.budget.TryWithdraw(int(r.prio))) {
		// Every node refused: back to the gateway's queue, to be sent
		// again once a request in flight ended and a place is free (the
		// gateway's requeue): free while it waits for such a Release,
		// a retry token when nothing else is in flight (see
		// Bulkhead.Requeue; simRequeuePaid took one already).
		pay := func() bool { return g.budget.TryWithdraw(int(r.prio)) }
		if simRequeuePaid {
			pay = nil
		}
		r.gen++
		r.state = rsWaiting
		if !s.requeue(id, smp, pay) {
			s.retire(id, outError)
		}
		return
	}
	r.permit.Release(smp)
	s.retire(id, outError)
}

// debugSimP0 is told of every P0 request that failed (tests' traces).
var debugSimP0 func(s *sim, id int32, outcome string)

// simRetry429: the gateways retry a 429 on another node (the gateway's
// default retry_on); tests switch it off to compare.
var simRetry429 = true

// simRequeue429: a request every node refused goes back to its gateway's
// bulkhead queue (within the retry budget and its deadline), as the
// gateway does (Bulkhead.Requeue); tests switch it off to compare.
var simRequeue429 = true

// simRequeuePaid: every requeue takes a retry token, even one that waits
// for a Release (the gateway before the fourteenth pass); tests switch it
// on to compare.
var simRequeuePaid = false

// untried reports whether a live node is left that r was not sent to.
func (s *sim) untried(r *simReq) bool {
	for i := range s.nodes {
		if s.nodes[i].up && r.tried&(1<<i) == 0 {
			return true
		}
	}
	return false
}

// giveUp: the queue timeout or the client's deadline.
func (s *sim) giveUp(id int32, outcome simOutcome) {
	r := &s.reqs[id]
	g := &s.gws[r.gw]
	switch r.state {
	case rsWaiting:
		if !g.bh.cancelWait(r.w) {
			return // decided in the same instant: flush handles it
		}
		r.w = nil
		if outcome == outTimeout {
			s.retire(id, outTimeout)
		} else {
			s.retire(id, outcome)
		}
	case rsAtNode, rsRefused:
		if outcome != outTimeout {
			return // the queue timeout no longer applies
		}
		g.loads[r.node]--
		r.permit.Release(Sample{RTT: dur(s.now - r.sent), Dropped: true})
		if r.state == rsRefused {
			s.retire(id, outTimeout)
			return
		}
		// The node keeps the work (abort_on_disconnect off): a zombie.
		s.outcomes[outTimeout]++
		s.res.Offered[r.prio]++
		if r.prio == P0 {
			s.p0Failed[outTimeout]++
		}
		r.state = rsZombie
	}
}

// phase applies the capacity change of phase i (1: the change, 2: back).
func (s *sim) phase(i int) {
	c := &s.cell
	back := i == 2
	switch c.Change {
	case "loss":
		nd := &s.nodes[0]
		if back {
			nd.up, nd.busy, nd.queue = true, 0, nil
			s.resized(c.Nodes-1, c.Nodes)
			return
		}
		s.kill(0)
		s.resized(c.Nodes, c.Nodes-1)
	case "slow":
		m := 3.0
		if back {
			m = 1
		}
		for j := range s.nodes {
			s.nodes[j].mult = m
		}
	case "slots":
		for j := range s.nodes {
			sl := max(1, c.nodeSlots(j)/4)
			if back {
				sl = c.nodeSlots(j)
			}
			s.nodes[j].slots = sl
			s.nextAt(j)
		}
	}
}

// resized tells the gateways' limiters that the nodes in rotation went
// from from to to (the balancer knows at once).
func (s *sim) resized(from, to int) {
	if !simResize {
		return
	}
	for i := range s.gws {
		if rz, ok := s.gws[i].bh.Limiter().(Resizer); ok {
			rz.Resize(from, to)
		}
	}
}

// simResize: the gateways tell their limiters when a node leaves or
// rejoins the rotation (the balancer knows at once: see Resizer); tests
// switch it off to compare.
var simResize = true

// kill SIGKILLs node ni: its requests see a reset; each is retried on
// another node within its gateway's retry budget, else fails (no sample).
func (s *sim) kill(ni int) {
	nd := &s.nodes[ni]
	nd.up = false
	var victims []int32
	for id := range s.reqs {
		r := &s.reqs[id]
		if r.node == ni && (r.state == rsAtNode || r.state == rsZombie || r.state == rsRefused) {
			victims = append(victims, int32(id))
		}
	}
	nd.busy, nd.queue = 0, nil
	for _, id := range victims {
		r := &s.reqs[id]
		if r.state == rsZombie {
			r.gen++
			r.state = rsFree
			s.free = append(s.free, id)
			continue
		}
		g := &s.gws[r.gw]
		g.loads[ni]--
		r.gen++ // its pending done or refusal is void
		if !g.budget.TryWithdraw(int(r.prio)) {
			r.permit.Release(Sample{})
			s.retire(id, outError)
			continue
		}
		s.push(simEvent{at: r.deadline, kind: evDeadline, id: id, gen: r.gen})
		s.send(id, true)
	}
}

// debugWaits, when set, maps a ticket to its wait at the node and its service time.
var debugWaits map[uint64][2]float64

func dur(sec float64) time.Duration { return time.Duration(sec * 1e9) }

// finish computes the per-phase figures.
func (s *sim) finish(mults []float64) {
	c := &s.cell
	res := &s.res
	for o, name := range outcomeNames {
		if n := s.outcomes[o]; n > 0 {
			res.Outcomes[name] = n
		}
		if n := s.p0Failed[o]; n > 0 {
			res.Outcomes["P0:"+name] = n
		}
	}
	res.Trace = s.lat
	start := 0.0
	all := c.slotsWith(true, false)
	truths := []int{all}
	if c.Change == "loss" {
		truths = append(truths, c.slotsWith(false, false), all)
	} else if c.Change == "slots" {
		truths = append(truths, c.slotsWith(true, true), all)
	} else if c.Change != "" {
		truths = append(truths, all, all)
	}
	times := s.latT
	var win []float64
	for k, end := range s.phaseEnd {
		truth := float64(truths[k])
		mean := s.mean * mults[k]
		band := math.Max(simSettleFloor, simSettleBand*truth)
		var idx []int
		for i, tt := range times {
			if tt >= start && tt < end {
				idx = append(idx, i)
			}
		}
		settled := -1.0
		// The trailing window of limits, [idx[lo], i] (the points less
		// than simTrail mean service times before i), kept sorted: its
		// median is the one a sort of the window gives.
		trail := simTrail * mean
		win = win[:0]
		lo := 0
		for _, i := range idx {
			v := s.lat[i]
			p, _ := slices.BinarySearch(win, v)
			win = slices.Insert(win, p, v)
			for !(times[i]-times[idx[lo]] < trail) {
				q, _ := slices.BinarySearch(win, s.lat[idx[lo]])
				win = slices.Delete(win, q, q+1)
				lo++
			}
			in := math.Abs(win[len(win)/2]-truth) <= band
			if !in {
				settled = -1
			} else if settled < 0 {
				settled = times[i]
			}
		}
		pr := simPhaseResult{Truth: truths[k], Mean: mean, Duration: end - start, Settle: math.Inf(1)}
		from := start + (end-start)/2
		if settled >= 0 {
			// Fill and CV from the settle on, and over at least the
			// phase's second half (a settle in the phase's last moments
			// leaves too little to measure).
			pr.Settle = (settled - start) / mean
			from = min(settled, from)
		}
		var sum, sq float64
		n := 0
		for _, i := range idx {
			if times[i] >= from {
				sum += s.lat[i]
				sq += s.lat[i] * s.lat[i]
				n++
			}
		}
		if n > 0 {
			m := sum / float64(n)
			pr.MeanLim = m
			pr.CV = math.Sqrt(math.Max(0, sq/float64(n)-m*m)) / m
		}
		busy := 0.0
		for _, sv := range s.okServed {
			// The part of its service inside [from, end).
			busy += math.Max(0, math.Min(sv[1], end)-math.Max(sv[0], from))
		}
		if end > from {
			// The slot-time the ok requests took ÷ the slot-time there
			// was. Counting ok requests against Truth / Mean would read
			// the draws' luck: over a phase a few hundred service times
			// long, a small backend's draws run several per cent short
			// or long (on 3 × 4 slots a static semaphore at the truth
			// read 0.80–1.06 by that count), and which kinds are served
			// (Mixed) follows the priorities.
			pr.Fill = busy / ((end - from) * truth)
		}
		res.Phases = append(res.Phases, pr)
		start = end
	}
	if len(s.admitted) > 0 && len(s.works) > 0 {
		// The element a sort would put there: the p99 needs no full sort.
		res.Unloaded = nthSmallest(s.works, int(0.99*float64(len(s.works))))
		res.P99Ratio = nthSmallest(s.admitted, int(0.99*float64(len(s.admitted)))) / res.Unloaded
	}
}

// traceEstimate, set by LEVEE_MATRIX_TRACE=estimate, traces each
// adaptive limiter's estimate as the limit outside probes would be, in
// place of its limit: a diagnostic of how much of the settle and the CV
// the probes' excursions cost. The gateways admit as always, so fill, P0
// and goodput read the same.
var traceEstimate = os.Getenv("LEVEE_MATRIX_TRACE") == "estimate"

// tracedLimit is what the simulation's limit trace records for l.
func tracedLimit(l Limiter) int {
	a := adaptiveOf(l)
	if a == nil || !traceEstimate {
		return l.Limit()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.restingLimit())
}

// adaptiveOf returns l's adaptive machinery, or nil.
func adaptiveOf(l Limiter) *adaptive {
	switch v := l.(type) {
	case *Gradient:
		return v.adaptive
	case *AIMD:
		return v.adaptive
	}
	return nil
}

// acquireAsync is Acquire for a caller that cannot block: it grants at
// once (Permit, nil, false), fails (ErrQueueFull), or queues w (queued
// true); w.notify is then called under b.mu once w is granted or
// displaced.
func (b *Bulkhead) acquireAsync(w *waiter) (Permit, error, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pm, ok := b.tryLocked(w.prio); ok {
		return pm, nil, false
	}
	if err := b.enqueueLocked(w); err != nil {
		return Permit{}, err, false
	}
	return Permit{}, nil, true
}

// requeueAsync is Requeue for a caller that cannot block: it gives pm's
// place back (feeding the limiter s) and parks w until the next Release
// (queued true), or, with nothing else in flight, is acquireAsync if pay
// grants it (else ErrNotRequeued).
func (b *Bulkhead) requeueAsync(w *waiter, pm *Permit, s Sample, pay func() bool) (Permit, error, bool) {
	b.giveBack(pm, s)
	b.mu.Lock()
	if b.parkable() {
		defer b.mu.Unlock()
		b.parkLocked(w)
		return Permit{}, nil, true
	}
	b.mu.Unlock()
	if pay == nil || pay() {
		return b.acquireAsync(w)
	}
	b.wakeParked()
	return Permit{}, ErrNotRequeued, false
}

// cancelWait removes an undecided waiter; false when it was decided.
func (b *Bulkhead) cancelWait(w *waiter) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.decided {
		return false
	}
	b.removeLocked(w)
	return true
}

// permitOf is the permit of a granted waiter.
func (b *Bulkhead) permitOf(w *waiter) Permit {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.permitLocked(w)
}
