package fakemodel

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Request outcomes counted in levee_fakemodel_requests_total.
const (
	OutcomeOK         = "ok"          // answered 200
	OutcomeError      = "error"       // injected 500
	OutcomeHang       = "hang"        // never answered; the client gave up
	OutcomeRejected   = "rejected"    // 429: no slot and the overflow policy refused to wait
	OutcomeAborted    = "aborted"     // the client left before the answer was delivered
	OutcomeBadRequest = "bad_request" // 4xx: malformed request
)

var outcomes = []string{OutcomeOK, OutcomeError, OutcomeHang, OutcomeRejected, OutcomeAborted, OutcomeBadRequest}

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
	node := prometheus.Labels{"node": n.addr}
	m := &nodeMetrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_fakemodel_requests_total", Help: "Requests by outcome (ok, error, hang, rejected, aborted, bad_request).", ConstLabels: node,
		}, []string{"outcome"}),
		service: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "levee_fakemodel_service_seconds", Help: "Time a request held its slot (queue wait excluded).", ConstLabels: node,
			Buckets: prometheus.ExponentialBucketsRange(0.005, 60, 20),
		}),
		wasted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "levee_fakemodel_wasted_seconds_total", Help: "Service time spent on requests whose client had left before the answer was delivered.", ConstLabels: node,
		}),
	}
	for _, o := range outcomes {
		m.requests.WithLabelValues(o)
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: node}, f)
	}
	reg.MustRegister(
		m.requests, m.service, m.wasted,
		gauge("levee_fakemodel_in_service", "Requests holding a slot.", func() float64 { s, _, _ := n.slots.state(); return float64(s) }),
		gauge("levee_fakemodel_queued", "Requests waiting for a slot.", func() float64 { _, q, _ := n.slots.state(); return float64(q) }),
		gauge("levee_fakemodel_slots", "Configured slots.", func() float64 { _, _, l := n.slots.state(); return float64(l) }),
		gauge("levee_fakemodel_mean_service_seconds", "Configured mean service time of a non-stream request (capacity = slots / mean).", func() float64 { return n.Knobs().MeanService().Seconds() }),
		gauge("levee_fakemodel_ballast_bytes", "Retained ballast of the gc pressure knobs.", func() float64 { return float64(n.pressure.Stats().BallastBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "levee_fakemodel_churned_bytes_total", Help: "Garbage allocated by the churn knob.", ConstLabels: node},
			func() float64 { return float64(n.pressure.Stats().ChurnedBytes) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}
