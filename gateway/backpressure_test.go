package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/internal/wire"
)

// TestNodeBackpressureRaisesTheLevel: a model node past its watermark (here
// told to signal with backpressure_force) sends X-Levee-Backpressure on its
// answers; with one of two nodes signalling (share 0.5) the guard goes
// red, per guard.backpressure_share. When the node's next answer no longer
// carries the signal, the level falls back after the cooldown, however
// long the signal's TTL.
func TestNodeBackpressureRaisesTheLevel(t *testing.T) {
	k := quickKnobs()
	k.Backpressure.Force = true
	loud, quiet := startNode(t, k), startNode(t, quickKnobs())
	s := startGateway(t, func(c *gateway.Config) {
		c.Guard.Interval, c.Guard.Cooldown = 10*time.Millisecond, 50*time.Millisecond
		// A signal ends with the node's next answer without it; a long TTL
		// keeps a starved test machine from ageing it out between checks.
		c.Guard.BackpressureTTL = time.Minute
		c.Guard.InflightRatio, c.Guard.QueueFill = gateway.Watermarks{}, gateway.Watermarks{}
	}, loud, quiet)
	base := "http://" + s.Addr()
	chat := func() {
		req, _ := http.NewRequest(http.MethodPost, base+wire.PathChat, strings.NewReader(`{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer k0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	level := func() float64 { return metric(t, s, wire.MetricOverloadLevel, nil) }
	deadline := time.Now().Add(20 * time.Second)
	for level() < 2 && time.Now().Before(deadline) {
		chat() // least-outstanding balancing reaches both nodes
	}
	if l := level(); l != 2 {
		t.Fatalf("overload level %v with one of two nodes signalling, want 2 (red)", l)
	}
	if got := metric(t, s, wire.MetricUpstreamBackpressure, nil); got != 1 {
		t.Fatalf("%s sums to %v, want 1 (one node)", wire.MetricUpstreamBackpressure, got)
	}
	if _, err := loud.PatchKnobs([]byte(`{"backpressure_force":false}`)); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for level() != 0 && time.Now().Before(deadline) {
		chat()
		time.Sleep(10 * time.Millisecond)
	}
	if l := level(); l != 0 {
		t.Fatalf("overload level %v after the node stopped signalling, want 0", l)
	}
}
