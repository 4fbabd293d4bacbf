package fakemodel

import (
	"context"
	"io"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/internal/wire/wiretest"
)

// nodeMetricsText serves one request through a node and returns its
// /metrics answer.
func nodeMetricsText(t *testing.T) []byte {
	t.Helper()
	_, url := startNode(t, fixedKnobs(5, 3, OverflowQueue))
	if code, _, err := post(context.Background(), url+wire.PathChat, chatBody); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	resp, err := testClient.Get(url + wire.PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMetricsContract: a node's /metrics follows Prometheus conventions
// (promlint finds nothing) and serves exactly wire's catalogue, with its
// types and labels.
func TestMetricsContract(t *testing.T) {
	wiretest.CheckMetrics(t, nodeMetricsText(t), wire.FakeModelMetrics())
}
