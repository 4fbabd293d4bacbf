package gateway

import (
	rtmetrics "runtime/metrics"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// routeID indexes the traffic routes (the `route` label).
type routeID uint8

const (
	routeChat routeID = iota
	routePredict
	routeAgent
	routeExport
	routeStandard
	routeCompletions
	routeEmbeddings
	routeOther // unknown paths under the traffic listener
	numRoutes
)

// String returns the route's wire name (its index in wire.Routes).
func (r routeID) String() string { return wire.Routes()[r] }

// classID indexes the route classes (the `class` label).
type classID uint8

const (
	classAI classID = iota
	classAgent
	classStream
	classStandard
	numClasses
)

// String returns the class's wire name (its index in wire.Classes).
func (c classID) String() string { return wire.Classes()[c] }

// routeClass maps a route to its class.
var routeClass = [numRoutes]classID{classAI, classAI, classAgent, classStream, classStandard, classAI, classAI, classStandard}

// hasFallback reports whether route r has a fallback answer (when the
// fallback defense is on). Completions and embeddings have none: their
// clients are programs (eval harnesses, batch jobs, indexers) that read
// the text or the vectors and not X-Levee-Fallback, so a made-up
// completion or vector would be taken for the model's; they get the shed
// (503) or the error instead, which they retry.
func (r routeID) hasFallback() bool {
	return r == routeChat || r == routePredict || r == routeAgent
}

// metrics holds the gateway's own instruments. Counters of the request
// path are resolved once here, so counting never looks labels up.
type metrics struct {
	reg *prometheus.Registry

	requests  [numRoutes][admit.NumPriorities][wire.NumServerOutcomes]prometheus.Counter
	shed      [wire.NumShedReasons][admit.NumPriorities]prometheus.Counter
	admitted  [numClasses][admit.NumPriorities]prometheus.Counter
	queueWait [numClasses]prometheus.Observer
	// streamTTFT is a streamed answer's time to its first data line.
	streamTTFT prometheus.Histogram
	fallbacks  labeled // route, reason
	subcalls   labeled // result
	tasks      labeled // result, level

	tokensReserved [admit.NumPriorities]prometheus.Counter
	tokensUsed     [admit.NumPriorities]prometheus.Counter
}

func newMetrics(g *Gateway) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	req := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: wire.MetricRequests,
		Help: "Traffic requests by route, priority and outcome; every request counted exactly once.",
	}, []string{wire.LabelRoute, wire.LabelPriority, wire.LabelOutcome})
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: wire.MetricShed,
		Help: "Requests shed by the defense chain, by reason and priority.",
	}, []string{wire.LabelReason, wire.LabelPriority})
	adm := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: wire.MetricAdmitted,
		Help: "Requests admitted by the defense chain (a slot and its token budget granted), by class and priority; counted when admitted.",
	}, []string{wire.LabelClass, wire.LabelPriority})
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    wire.MetricQueueWait,
		Help:    "Time spent waiting in a bulkhead queue (granted or not).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	}, []string{wire.LabelClass})
	m.fallbacks = newLabeled(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: wire.MetricFallbacks,
		Help: "Fallback answers served, by route and reason.",
	}, []string{wire.LabelRoute, wire.LabelReason}))
	m.subcalls = newLabeled(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: wire.MetricSubcalls,
		Help: "Agent sub-calls by result: ok, error, timeout, capped (not sent: amplification cap), skipped (not sent: degraded depth).",
	}, []string{wire.LabelResult}))
	for r := range numRoutes {
		for p := range admit.NumPriorities {
			for o := range wire.NumServerOutcomes {
				m.requests[r][p][o] = req.WithLabelValues(routeID(r).String(), admit.Priority(p).String(), o.String())
			}
		}
	}
	for s := range wire.NumShedReasons {
		for p := range admit.NumPriorities {
			m.shed[s][p] = shed.WithLabelValues(s.String(), admit.Priority(p).String())
		}
	}
	for c := range numClasses {
		m.queueWait[c] = wait.WithLabelValues(classID(c).String())
		for p := range admit.NumPriorities {
			m.admitted[c][p] = adm.WithLabelValues(classID(c).String(), admit.Priority(p).String())
		}
	}
	for _, res := range wire.SubcallResults() {
		m.subcalls.make(res, "")
	}
	m.tasks = newLabeled(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: wire.MetricAgentTasks,
		Help: "Agent tasks by result (ok, degraded, fallback: answered in time; dropped, shed, timeout, error) and the agent level they were planned at.",
	}, []string{wire.LabelResult, wire.LabelLevel}))
	for _, res := range wire.AgentTaskResults() {
		for _, l := range wire.Levels() {
			m.tasks.make(res, l)
		}
	}
	reserved := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: wire.MetricTokensReserved,
		Help: "Estimated tokens reserved by admitted model requests, by priority.",
	}, []string{wire.LabelPriority})
	used := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: wire.MetricTokensUsed,
		Help: "Tokens the model reported using (usage, a stream's usage chunk or counted chunks; the estimate when it reported nothing), by priority.",
	}, []string{wire.LabelPriority})
	for p := range admit.NumPriorities {
		m.tokensReserved[p] = reserved.WithLabelValues(admit.Priority(p).String())
		m.tokensUsed[p] = used.WithLabelValues(admit.Priority(p).String())
	}
	// Every fallback series exists from the start, so a scrape before the
	// first fallback reads 0 rather than nothing.
	for _, r := range []routeID{routePredict, routeChat, routeAgent} {
		for _, reason := range []string{wire.FallbackBlack, wire.FallbackUpstream} {
			m.fallbacks.make(r.String(), reason)
		}
	}
	m.fallbacks.make(routeAgent.String(), wire.FallbackRules)
	m.streamTTFT = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    wire.MetricStreamTTFT,
		Help:    "Streamed chat answers: time from sending the call to the model to the first data line of its answer (SSE comments do not count).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})
	m.reg.MustRegister(req, shed, adm, wait, m.streamTTFT, m.fallbacks.vec, m.subcalls.vec, m.tasks.vec, reserved, used,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gatewayCollector{g})
	return m
}

// labeled is a counter vector of one or two labels whose series made at
// start (make) are kept, so that counting one looks no labels up (a
// WithLabelValues checks, hashes and looks them up under a lock); any
// other is looked up as before, and made on its first count.
type labeled struct {
	vec      *prometheus.CounterVec
	children map[string]map[string]prometheus.Counter // first label, second ("" for one)
}

func newLabeled(vec *prometheus.CounterVec) labeled {
	return labeled{vec: vec, children: map[string]map[string]prometheus.Counter{}}
}

// make makes the series (a, b), b "" for a vector of one label.
func (l labeled) make(a, b string) {
	if l.children[a] == nil {
		l.children[a] = map[string]prometheus.Counter{}
	}
	if b == "" {
		l.children[a][b] = l.vec.WithLabelValues(a)
	} else {
		l.children[a][b] = l.vec.WithLabelValues(a, b)
	}
}

// with returns the counter of the label values (one or two).
func (l labeled) with(a string, b ...string) prometheus.Counter {
	k := ""
	if len(b) > 0 {
		k = b[0]
	}
	if c := l.children[a][k]; c != nil {
		return c
	}
	return l.vec.WithLabelValues(append([]string{a}, b...)...)
}

var (
	descInflight   = prometheus.NewDesc(wire.MetricInflight, "Requests holding a bulkhead place, by route class: admitted and not done with the model (a non-streamed answer gives its place back once read from the model, before it is written to the client).", []string{wire.LabelClass}, nil)
	descQueueDepth = prometheus.NewDesc(wire.MetricQueueDepth, "Requests waiting in a bulkhead queue, by class and priority.", []string{wire.LabelClass, wire.LabelPriority}, nil)
	descLimit      = prometheus.NewDesc(wire.MetricConcurrencyLimit, "Current bulkhead concurrency limit, by class.", []string{wire.LabelClass}, nil)
	descLevel      = prometheus.NewDesc(wire.MetricOverloadLevel, "Overload level: 0 green, 1 yellow, 2 red, 3 black.", nil, nil)
	descLagP50     = prometheus.NewDesc(wire.MetricLagProbeP50, "Lag probe oversleep, median over the recent window.", nil, nil)
	descLagP99     = prometheus.NewDesc(wire.MetricLagProbeP99, "Lag probe oversleep, 99th percentile over the recent window.", nil, nil)
	descSchedP99   = prometheus.NewDesc(wire.MetricSchedLatencyP99, "Goroutine scheduling latency (runtime/metrics), 99th percentile over the recent window.", nil, nil)
	descGCP99      = prometheus.NewDesc(wire.MetricGCPauseP99, "GC stop-the-world pauses, 99th percentile over the recent window.", nil, nil)
	descHeap       = prometheus.NewDesc(wire.MetricHeap, "Heap bytes in objects at the scrape, live or not yet freed by a GC (runtime/metrics "+metricHeapObjects+").", nil, nil)
	descTokens     = prometheus.NewDesc(wire.MetricTokensInflight, "Estimated LLM tokens of requests in flight.", nil, nil)
	descBudget     = prometheus.NewDesc(wire.MetricTokenBudget, "Token budget (cap on "+wire.MetricTokensInflight+").", nil, nil)
	descDefense    = prometheus.NewDesc(wire.MetricDefenseEnabled, "Whether a defense is on (1) or off (0).", []string{wire.LabelDefense}, nil)
	descSubInfl    = prometheus.NewDesc(wire.MetricSubcallsInflight, "Agent sub-calls in flight (amplification).", nil, nil)
	descShed       = prometheus.NewDesc(wire.MetricShedLevel, "The overload guard's shed level: 0 admits all, 0..1 sheds that share of P2, 1..2 all P2 and (level-1) of P1.", nil, nil)
	descShedShare  = prometheus.NewDesc(wire.MetricShedShare, "Share of requests the overload guard refuses now, by priority.", []string{wire.LabelPriority}, nil)
	descChanges    = prometheus.NewDesc(wire.MetricLevelChanges, "Overload level changes (GET /admin/state lists the latest with their causes).", nil, nil)
	descSubQueued  = prometheus.NewDesc(wire.MetricSubcallsQueued, "Agent sub-calls waiting for a place under the amplification cap (sub-calls every node refused, waiting to go again, included).", nil, nil)
	descAgentLevel = prometheus.NewDesc(wire.MetricAgentLevel, "The level agent tasks are planned at: 0 green, 1 yellow, 2 red, 3 black.", nil, nil)
	descBackpress  = prometheus.NewDesc(wire.MetricUpstreamBackpressure, "1 while the node's backpressure signal counts.", []string{wire.LabelNode}, nil)
)

// gatewayCollector reads gauges at scrape time.
type gatewayCollector struct{ g *Gateway }

func (c gatewayCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInflight, descQueueDepth, descLimit, descLevel, descLagP50, descLagP99, descSchedP99, descGCP99, descHeap, descTokens, descBudget, descDefense, descSubInfl, descSubQueued, descAgentLevel, descBackpress, descShed, descShedShare, descChanges} {
		ch <- d
	}
}

func (c gatewayCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.g
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for i, b := range g.bulkheads {
		st := b.Stats()
		name := classID(i).String()
		gauge(descInflight, float64(st.Inflight), name)
		gauge(descLimit, float64(st.Limit), name)
		for p, d := range st.QueueDepth {
			gauge(descQueueDepth, float64(d), name, admit.Priority(p).String())
		}
	}
	s := g.guard.Snapshot()
	gauge(descLevel, float64(s.Level))
	gauge(descShed, s.Shed)
	for p, v := range s.ShedShare {
		gauge(descShedShare, v, admit.Priority(p).String())
	}
	ch <- prometheus.MustNewConstMetric(descChanges, prometheus.CounterValue, float64(s.ChangeSeq))
	gauge(descLagP50, s.LagP50Ms/1e3)
	gauge(descLagP99, s.LagP99Ms/1e3)
	gauge(descSchedP99, s.SchedP99Ms/1e3)
	gauge(descGCP99, s.GCPauseP99Ms/1e3)
	gauge(descHeap, float64(heapObjectsBytes()))
	gauge(descTokens, float64(g.budget.Inflight()))
	gauge(descBudget, float64(g.budget.Capacity()))
	d := g.Defenses()
	for _, n := range wire.DefenseNames() {
		on, _ := d.Get(n)
		v := 0.0
		if on {
			v = 1
		}
		gauge(descDefense, v, n)
	}
	running, queued := g.subcalls.stats()
	gauge(descSubInfl, float64(running))
	gauge(descSubQueued, float64(queued))
	gauge(descAgentLevel, float64(g.agentLevel()))
	now := time.Now()
	for _, n := range g.pool.Stats() {
		v := 0.0
		if g.nodeSignals.signalling(hostOf(n.Addr), now) {
			v = 1
		}
		gauge(descBackpress, v, n.Addr)
	}
}

// metricHeapObjects is the runtime's count of the bytes heap objects
// occupy: live ones and dead ones a GC has not freed yet.
const metricHeapObjects = "/memory/classes/heap/objects:bytes"

// heapObjectsBytes reads metricHeapObjects now. It is the heap the gauge
// shows: unlike the live heap the last GC marked (the overload guard's
// heap_bytes signal), it moves between GCs, when a heap can grow to twice
// that figure (GOGC=100) on its way to the pod's memory limit.
func heapObjectsBytes() uint64 {
	s := [1]rtmetrics.Sample{{Name: metricHeapObjects}}
	rtmetrics.Read(s[:])
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
