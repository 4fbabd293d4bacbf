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
