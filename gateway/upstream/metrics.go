package upstream

import (
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descUp = prometheus.NewDesc("levee_upstream_up",
		"Whether the model node passed its last health check (1) or not (0).", []string{"node"}, nil)
	descBreaker = prometheus.NewDesc("levee_upstream_breaker_state",
		"Circuit breaker state per model node: 0 closed, 1 half-open, 2 open.", []string{"node"}, nil)
	descInflight = prometheus.NewDesc("levee_upstream_inflight",
		"Requests outstanding on the model node (until the response body is closed).", []string{"node"}, nil)
	descRetries = prometheus.NewDesc("levee_retries_total",
		"Retries of failed attempts by call priority: sent, or denied by the retry budget.", []string{"priority", "result"}, nil)
	descAttempts = prometheus.NewDesc("levee_upstream_attempts_total",
		"Attempts sent to model nodes, by kind: first, retry, hedge.", []string{"kind"}, nil)
	descFailures = prometheus.NewDesc("levee_upstream_attempt_failures_total",
		"Failed attempts per model node, by reason: connect, 5xx, timeout (abandoned by the attempt timeout).", []string{"node", "reason"}, nil)
	descHedges = prometheus.NewDesc("levee_upstream_hedges_total",
		"Hedged attempts: sent, won (answered first), denied by the hedge budget.", []string{"result"}, nil)
	descEjections = prometheus.NewDesc("levee_upstream_ejections_total",
		"Outlier ejections per model node, by reason: consecutive_failures, failure_rate, latency, probe_failed.", []string{"node", "reason"}, nil)
	descEjection = prometheus.NewDesc("levee_upstream_ejection_state",
		"Outlier state per model node: 0 in rotation, 1 probing, 2 ejected.", []string{"node"}, nil)
	descAttemptTimeout = prometheus.NewDesc("levee_upstream_attempt_timeout_seconds",
		"Current derived attempt timeout per model node and call class, before the caller's deadline bounds it (0: none yet).", []string{"node", "class"}, nil)
	descHedgeDelay = prometheus.NewDesc("levee_upstream_hedge_delay_seconds",
		"Current hedge delay per model node and call class (0: none yet).", []string{"node", "class"}, nil)
)

// Collectors returns the pool's Prometheus collectors, to register once:
// the gauges levee_upstream_up{node}, levee_upstream_breaker_state{node},
// levee_upstream_inflight{node}, levee_upstream_ejection_state{node},
// levee_upstream_attempt_timeout_seconds{node,class} and
// levee_upstream_hedge_delay_seconds{node,class}; the histogram
// levee_upstream_latency_seconds (time to first byte); and the counters
// levee_retries_total{priority,result}, levee_upstream_attempts_total{kind},
// levee_upstream_attempt_failures_total{node,reason},
// levee_upstream_hedges_total{result} and
// levee_upstream_ejections_total{node,reason}.
func (p *Pool) Collectors() []prometheus.Collector {
	return []prometheus.Collector{poolCollector{p}, p.latency}
}

type poolCollector struct{ p *Pool }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descBreaker, descInflight, descRetries, descAttempts,
		descFailures, descHedges, descEjections, descEjection, descAttemptTimeout, descHedgeDelay} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.p
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for i, s := range p.Stats() {
		n := p.nodes[i]
		up := 0.0
		if s.Up {
			up = 1
		}
		gauge(descUp, up, s.Addr)
		gauge(descBreaker, breakerValue(s.Breaker), s.Addr)
		gauge(descInflight, float64(s.Inflight), s.Addr)
		gauge(descEjection, float64(p.outliers.current(n)), s.Addr)
		for k := failConnect; k < numFailureKinds; k++ {
			counter(descFailures, n.fails[k].Load(), s.Addr, failureNames[k])
		}
		tot := p.outliers.totals(i)
		for r, name := range ejectReasons {
			counter(descEjections, tot[r], s.Addr, name)
		}
		classes := n.stats.classNames()
		sort.Strings(classes)
		for _, class := range classes {
			t, h := p.timing(n, class, 0, false)
			gauge(descAttemptTimeout, t.Seconds(), s.Addr, class)
			gauge(descHedgeDelay, h.Seconds(), s.Addr, class)
		}
	}
	for i := range numPriorities {
		prio := "P" + strconv.Itoa(i)
		counter(descRetries, p.retriesSent[i].Load(), prio, "sent")
		counter(descRetries, p.retriesDenied[i].Load(), prio, "denied")
	}
	for k, name := range kindNames {
		counter(descAttempts, p.attempts[k].Load(), name)
	}
	counter(descHedges, p.hedgesSent.Load(), "sent")
	counter(descHedges, p.hedgesWon.Load(), "won")
	counter(descHedges, p.hedgesDenied.Load(), "denied")
}

func breakerValue(s string) float64 {
	switch s {
	case "half_open":
		return 1
	case "open":
		return 2
	}
	return 0
}
