package gateway

import (
	"io"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/internal/wire/wiretest"
)

// metricsText serves a few requests through a gateway and returns its
// /metrics answer.
func metricsText(t *testing.T) []byte {
	t.Helper()
	m := newFakeModel(t, 4, 0)
	s := startServer(t, testConfig(m.addr()))
	base := "http://" + s.Addr()
	for _, r := range []struct{ method, path, body string }{
		{"POST", wire.PathPredict, predictBody}, {"POST", wire.PathChat, chatBody}, {"GET", wire.PathStandard + "ping", ""},
	} {
		if a := call(t, r.method, base+r.path, "k0", r.body); a.err != nil || a.status != 200 {
			t.Fatalf("%s %s: %v", r.method, r.path, a)
		}
	}
	resp, err := testClient.Get(base + wire.PathMetrics)
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

// TestMetricsContract: the gateway's /metrics follows Prometheus
// conventions (promlint finds nothing) and serves exactly wire's
// catalogue, with its types and labels.
func TestMetricsContract(t *testing.T) {
	wiretest.CheckMetrics(t, metricsText(t), wire.GatewayMetrics(), wire.GatewayRedisMetrics()...)
}
