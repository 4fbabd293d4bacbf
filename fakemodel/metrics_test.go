package fakemodel

import (
	"context"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/internal/wire/wiretest"
)

// TestMetricsContract: a node's /metrics, after a request, follows
// Prometheus conventions (promlint finds nothing) and serves exactly
// wire's catalogue, with its types and labels.
func TestMetricsContract(t *testing.T) {
	_, url := startNode(t, fixedKnobs(5, 3, OverflowQueue))
	if code, _, err := post(context.Background(), url+wire.PathChat, chatBody); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	wiretest.CheckServer(t, url, wire.FakeModelMetrics())
}

// TestMeanServiceMetricCapped: the capacity basis a node exports is the
// mean of its capped draws, not the uncapped lognormal's (12,663 s for
// p50 1 ms, p99 600 s) nor an overflowed negative (p50 1e-6 ms).
func TestMeanServiceMetricCapped(t *testing.T) {
	n, url := startNode(t, fixedKnobs(5, 3, OverflowQueue))
	for _, tc := range []struct {
		patch  string
		lo, hi float64 // seconds
	}{
		{`{"latency":{"dist":"lognormal","p50_ms":1,"p99_ms":600000}}`, 10.3, 10.5},
		{`{"latency":{"dist":"lognormal","p50_ms":0.000001,"p99_ms":600000}}`, 7.6, 7.8},
		{`{"latency":{"dist":"fixed","fixed_ms":250}}`, 0.25, 0.25},
	} {
		if _, err := n.PatchKnobs([]byte(tc.patch)); err != nil {
			t.Fatal(err)
		}
		if got := scrape(t, url)["levee_fakemodel_mean_service_seconds"]; !(got >= tc.lo && got <= tc.hi) {
			t.Errorf("%s: mean service %g s, want within [%g, %g]", tc.patch, got, tc.lo, tc.hi)
		}
	}
}
