package gateway

import (
	"github.com/levee-lab/levee/gateway/admit"
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
	routeOther // unknown paths under the traffic listener
	numRoutes
)

var routeNames = [numRoutes]string{RouteChat, RoutePredict, RouteAgent, RouteExport, RouteStandard, "other"}

func (r routeID) String() string { return routeNames[r] }

// classID indexes the route classes (the `class` label).
type classID uint8

const (
	classAI classID = iota
	classAgent
	classStream
	classStandard
	numClasses
)

var classNames = [numClasses]string{ClassAI, ClassAgent, ClassStream, ClassStandard}

func (c classID) String() string { return classNames[c] }

// routeClass maps a route to its class.
var routeClass = [numRoutes]classID{classAI, classAI, classAgent, classStream, classStandard, classStandard}

// metrics holds the gateway's own instruments. Counters of the request
// path are resolved once here, so counting never looks labels up.
type metrics struct {
	reg *prometheus.Registry

	requests  [numRoutes][admit.NumPriorities][numOutcomes]prometheus.Counter
	shed      [numShedReasons][admit.NumPriorities]prometheus.Counter
	queueWait [numClasses]prometheus.Observer
	fallbacks *prometheus.CounterVec // route, reason
	subcalls  *prometheus.CounterVec // result
	storeErrs prometheus.Counter     // levee_ratelimit_store_fallback_total{store="local"}
}

func newMetrics(g *Gateway) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	req := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_requests_total",
		Help: "Traffic requests by route, priority and outcome; every request counted exactly once.",
	}, []string{"route", "priority", "outcome"})
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_shed_total",
		Help: "Requests shed by the defense chain, by reason and priority.",
	}, []string{"reason", "priority"})
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "levee_queue_wait_seconds",
		Help:    "Time spent waiting in a bulkhead queue (granted or not).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	}, []string{"class"})
	m.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_fallbacks_total",
		Help: "Fallback answers served, by route and reason.",
	}, []string{"route", "reason"})
	m.subcalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_agent_subcalls_total",
		Help: "Agent sub-calls by result: ok, error, timeout, capped (not sent: amplification cap), skipped (not sent: degraded depth).",
	}, []string{"result"})
	for r := range numRoutes {
		for p := range admit.NumPriorities {
			for o := range numOutcomes {
				m.requests[r][p][o] = req.WithLabelValues(routeID(r).String(), admit.Priority(p).String(), Outcome(o).String())
			}
		}
	}
	for s := range numShedReasons {
		for p := range admit.NumPriorities {
			m.shed[s][p] = shed.WithLabelValues(ShedReason(s).String(), admit.Priority(p).String())
		}
	}
	for c := range numClasses {
		m.queueWait[c] = wait.WithLabelValues(classID(c).String())
	}
	for _, res := range []string{"ok", "error", "timeout", "capped", "skipped"} {
		m.subcalls.WithLabelValues(res)
	}
	m.reg.MustRegister(req, shed, wait, m.fallbacks, m.subcalls,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gatewayCollector{g})
	return m
}

var (
	descInflight   = prometheus.NewDesc("levee_inflight", "Requests in flight past admission, by route class.", []string{"class"}, nil)
	descQueueDepth = prometheus.NewDesc("levee_queue_depth", "Requests waiting in a bulkhead queue, by class and priority.", []string{"class", "priority"}, nil)
	descLimit      = prometheus.NewDesc("levee_concurrency_limit", "Current bulkhead concurrency limit, by class.", []string{"class"}, nil)
	descLevel      = prometheus.NewDesc("levee_overload_level", "Overload level: 0 green, 1 yellow, 2 red, 3 black.", nil, nil)
	descLag        = prometheus.NewDesc("levee_lag_probe_seconds", "Lag probe oversleep over the recent window.", []string{"quantile"}, nil)
	descSched      = prometheus.NewDesc("levee_sched_latency_seconds", "Goroutine scheduling latency (runtime/metrics) over the recent window.", []string{"quantile"}, nil)
	descGC         = prometheus.NewDesc("levee_gc_pause_seconds", "GC stop-the-world pauses over the recent window.", []string{"quantile"}, nil)
	descHeap       = prometheus.NewDesc("levee_heap_bytes", "Live heap bytes.", nil, nil)
	descTokens     = prometheus.NewDesc("levee_tokens_inflight", "Estimated LLM tokens of requests in flight.", nil, nil)
	descBudget     = prometheus.NewDesc("levee_token_budget", "Token budget (cap on levee_tokens_inflight).", nil, nil)
	descDefense    = prometheus.NewDesc("levee_defense_enabled", "Whether a defense is on (1) or off (0).", []string{"defense"}, nil)
	descSubInfl    = prometheus.NewDesc("levee_agent_subcalls_inflight", "Agent sub-calls in flight (amplification).", nil, nil)
	descShed       = prometheus.NewDesc("levee_shed_level", "The overload guard's shed level: 0 admits all, 0..1 sheds that share of P2, 1..2 all P2 and (level-1) of P1.", nil, nil)
	descShedShare  = prometheus.NewDesc("levee_shed_share", "Share of requests the overload guard refuses now, by priority.", []string{"priority"}, nil)
	descChanges    = prometheus.NewDesc("levee_overload_level_changes_total", "Overload level changes (GET /admin/state lists the latest with their causes).", nil, nil)
	descLastChange = prometheus.NewDesc("levee_overload_last_change", "The latest overload level change: 1 for its level and causing signal (signal \"\" when every signal fell below its release mark); value label-free.", []string{"to", "signal"}, nil)
)

// gatewayCollector reads gauges at scrape time.
type gatewayCollector struct{ g *Gateway }

func (c gatewayCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInflight, descQueueDepth, descLimit, descLevel, descLag, descSched, descGC, descHeap, descTokens, descBudget, descDefense, descSubInfl, descShed, descShedShare, descChanges, descLastChange} {
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
	if n := len(s.Changes); n > 0 {
		last := s.Changes[n-1]
		gauge(descLastChange, 1, last.To.String(), last.Signal)
	}
	gauge(descLag, s.LagP50Ms/1e3, "0.5")
	gauge(descLag, s.LagP99Ms/1e3, "0.99")
	gauge(descSched, s.SchedP99Ms/1e3, "0.99")
	gauge(descGC, s.GCPauseP99Ms/1e3, "0.99")
	gauge(descHeap, float64(s.HeapBytes))
	gauge(descTokens, float64(g.budget.Inflight()))
	gauge(descBudget, float64(g.budget.Capacity()))
	d := g.Defenses()
	for _, n := range DefenseNames {
		on, _ := d.Get(n)
		v := 0.0
		if on {
			v = 1
		}
		gauge(descDefense, v, n)
	}
	gauge(descSubInfl, float64(g.subInflight.Load()))
}
