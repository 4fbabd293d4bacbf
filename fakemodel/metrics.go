package fakemodel

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/levee-lab/levee/internal/wire"
)

// Request outcomes counted in levee_fakemodel_requests_total (the wire
// names, here for the package's callers).
const (
	OutcomeOK         = wire.FakeOutcomeOK
	OutcomeError      = wire.FakeOutcomeError
	OutcomeHang       = wire.FakeOutcomeHang
	OutcomeRejected   = wire.FakeOutcomeRejected
	OutcomeAborted    = wire.FakeOutcomeAborted
	OutcomeBadRequest = wire.FakeOutcomeBadRequest
)

// nodeMetrics are one node's metrics, in its own registry, every series
// labelled node=<address>.
type nodeMetrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	service  prometheus.Histogram
	wasted   prometheus.Counter
}

func newNodeMetrics(n *Node) *nodeMetrics {
	reg := prometheus.NewRegistry()
	node := prometheus.Labels{wire.LabelNode: n.addr}
	m := &nodeMetrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: wire.MetricFakeRequests, Help: "Requests by outcome (ok, error, hang, rejected, aborted, bad_request).", ConstLabels: node,
		}, []string{wire.LabelOutcome}),
		service: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: wire.MetricFakeService, Help: "Time a request held its slot (queue wait excluded).", ConstLabels: node,
			Buckets: prometheus.ExponentialBucketsRange(0.005, 60, 20),
		}),
		wasted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: wire.MetricFakeWasted, Help: "Service time spent on requests whose client had left before the answer was delivered.", ConstLabels: node,
		}),
	}
	for _, o := range wire.FakeOutcomes() {
		m.requests.WithLabelValues(o)
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: node}, f)
	}
	reg.MustRegister(
		m.requests, m.service, m.wasted,
		gauge(wire.MetricFakeInService, "Requests holding a slot.", func() float64 { s, _, _ := n.slots.state(); return float64(s) }),
		gauge(wire.MetricFakeQueued, "Requests waiting for a slot.", func() float64 { _, q, _ := n.slots.state(); return float64(q) }),
		gauge(wire.MetricFakeSlots, "Configured slots.", func() float64 { _, _, l := n.slots.state(); return float64(l) }),
		gauge(wire.MetricFakeMeanService, "Configured mean service time of a non-stream request (capacity = slots / mean).", func() float64 { return n.Knobs().MeanService().Seconds() }),
		gauge(wire.MetricFakeBallast, "Retained ballast of the gc pressure knobs.", func() float64 { return float64(n.pressure.Stats().BallastBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: wire.MetricFakeChurned, Help: "Garbage allocated by the churn knob.", ConstLabels: node},
			func() float64 { return float64(n.pressure.Stats().ChurnedBytes) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}
