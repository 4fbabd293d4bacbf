package upstream

import (
	"sort"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	descUp = prometheus.NewDesc(wire.MetricUpstreamUp,
		"Whether the model node passed its last health check (1) or not (0).", []string{wire.LabelNode}, nil)
	descBreaker = prometheus.NewDesc(wire.MetricUpstreamBreakerState,
		"Circuit breaker state per model node: 0 closed, 1 half-open, 2 open.", []string{wire.LabelNode}, nil)
	descInflight = prometheus.NewDesc(wire.MetricUpstreamInflight,
		"Requests outstanding on the model node (until the response body is closed).", []string{wire.LabelNode}, nil)
	descRetries = prometheus.NewDesc(wire.MetricRetries,
		"Retries of failed attempts, and calls every node refused (429) sent again with nothing in flight to wait for (a wait for a place a call in flight frees is free), by call priority: sent, or denied by the retry budget.", []string{wire.LabelPriority, wire.LabelResult}, nil)
	descAttempts = prometheus.NewDesc(wire.MetricUpstreamAttempts,
		"Attempts sent to model nodes, by kind: first, retry, hedge.", []string{wire.LabelKind}, nil)
	descFailures = prometheus.NewDesc(wire.MetricUpstreamAttemptFailures,
		"Failed attempts per model node, by reason: connect, 5xx, timeout (abandoned by the attempt timeout).", []string{wire.LabelNode, wire.LabelReason}, nil)
	descHedges = prometheus.NewDesc(wire.MetricUpstreamHedges,
		"Hedged attempts: sent, won (answered first), denied by the hedge budget.", []string{wire.LabelResult}, nil)
	descEjections = prometheus.NewDesc(wire.MetricUpstreamEjections,
		"Outlier ejections per model node, by reason: consecutive_failures, failure_rate, latency, probe_failed.", []string{wire.LabelNode, wire.LabelReason}, nil)
	descEjection = prometheus.NewDesc(wire.MetricUpstreamEjectionState,
		"Outlier state per model node: 0 in rotation, 1 probing, 2 ejected.", []string{wire.LabelNode}, nil)
	descAttemptTimeout = prometheus.NewDesc(wire.MetricUpstreamAttemptTimeout,
		"Current derived attempt timeout per model node and call class, before the caller's deadline bounds it (0: none yet).", []string{wire.LabelNode, wire.LabelCallClass}, nil)
	descStaleRetries = prometheus.NewDesc(wire.MetricUpstreamStaleConnRetries,
		"Calls sent again on a new connection after the kept-alive one they were written on turned out closed by the node (EOF or reset before any answer byte); not counted against the node.", nil, nil)
	descPanics = prometheus.NewDesc(wire.MetricUpstreamAttemptPanics,
		"Attempts whose goroutine panicked (a bug, logged with its stack): the attempt failed, not retried, and not counted against its node.", nil, nil)
	descTimerPanics = prometheus.NewDesc(wire.MetricUpstreamTimerPanics,
		"Attempt-timeout and hedge timer callbacks that panicked (a bug, logged with its stack): the attempt runs on as if nothing could replace it, the call is not hedged; no node is blamed.", nil, nil)
	descHedgeDelay = prometheus.NewDesc(wire.MetricUpstreamHedgeDelay,
		"Current hedge delay per model node and call class (0: none yet).", []string{wire.LabelNode, wire.LabelCallClass}, nil)
)

// Collectors returns the pool's Prometheus collectors, to register once:
// the gauges levee_upstream_up{node}, levee_upstream_breaker_state{node},
// levee_upstream_inflight{node}, levee_upstream_ejection_state{node},
// levee_upstream_attempt_timeout_seconds{node,call_class} and
// levee_upstream_hedge_delay_seconds{node,call_class}; the histogram
// levee_upstream_latency_seconds (time to first byte); and the counters
// levee_retries_total{priority,result}, levee_upstream_attempts_total{kind},
// levee_upstream_attempt_failures_total{node,reason},
// levee_upstream_hedges_total{result},
// levee_upstream_ejections_total{node,reason},
// levee_upstream_stale_conn_retries_total,
// levee_upstream_attempt_panics_total and
// levee_upstream_timer_panics_total.
func (p *Pool) Collectors() []prometheus.Collector {
	return []prometheus.Collector{poolCollector{p}, p.latency}
}

type poolCollector struct{ p *Pool }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descBreaker, descInflight, descRetries, descAttempts,
		descFailures, descHedges, descEjections, descEjection, descAttemptTimeout, descHedgeDelay, descStaleRetries, descPanics, descTimerPanics} {
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
	for i, prio := range wire.Priorities() {
		counter(descRetries, p.retriesSent[i].Load(), prio, wire.RetrySent)
		counter(descRetries, p.retriesDenied[i].Load(), prio, wire.RetryDenied)
	}
	for k, name := range kindNames {
		counter(descAttempts, p.attempts[k].Load(), name)
	}
	counter(descStaleRetries, p.staleRetries.Load())
	counter(descPanics, p.panics.Load())
	counter(descTimerPanics, p.timerPanics.Load())
	counter(descHedges, p.hedgesSent.Load(), wire.HedgeSent)
	counter(descHedges, p.hedgesWon.Load(), wire.HedgeWon)
	counter(descHedges, p.hedgesDenied.Load(), wire.HedgeDenied)
}

func breakerValue(s string) float64 {
	switch s {
	case wire.BreakerHalfOpen:
		return float64(StateHalfOpen)
	case wire.BreakerOpen:
		return float64(StateOpen)
	}
	return 0
}
