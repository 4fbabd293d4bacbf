package upstream

import (
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
		"Retries after connection failures: sent, or denied by the retry budget.", []string{wire.LabelResult}, nil)
)

// Collectors returns the pool's Prometheus collectors, to register once:
// levee_upstream_up{node}, levee_upstream_breaker_state{node},
// levee_upstream_inflight{node}, levee_upstream_latency_seconds (time to
// response headers) and levee_retries_total{result="sent"|"denied"}.
func (p *Pool) Collectors() []prometheus.Collector {
	return []prometheus.Collector{poolCollector{p}, p.latency}
}

type poolCollector struct{ p *Pool }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descUp
	ch <- descBreaker
	ch <- descInflight
	ch <- descRetries
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.p.Stats() {
		up := 0.0
		if s.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, s.Addr)
		ch <- prometheus.MustNewConstMetric(descBreaker, prometheus.GaugeValue, breakerValue(s.Breaker), s.Addr)
		ch <- prometheus.MustNewConstMetric(descInflight, prometheus.GaugeValue, float64(s.Inflight), s.Addr)
	}
	k := c.p.Counters()
	ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(k.RetriesSent), wire.RetrySent)
	ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(k.RetriesDenied), wire.RetryDenied)
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
