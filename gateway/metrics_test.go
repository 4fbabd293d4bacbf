package gateway

import (
	"testing"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/internal/wire/wiretest"
)

// TestMetricsContract: the gateway's /metrics, after a few requests,
// follows Prometheus conventions (promlint finds nothing) and serves
// exactly wire's catalogue, with its types and labels.
func TestMetricsContract(t *testing.T) {
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
	wiretest.CheckServer(t, base, wire.GatewayMetrics(), wire.GatewayRedisMetrics()...)
}
