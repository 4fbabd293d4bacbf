package gateway

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/syncbuf"
)

// The model classes' adaptive limits follow the nodes in rotation: a node
// whose process is gone (its port refuses the health check) takes a third
// of the limit with it, and a node that fails its checks another; passing
// them again brings its share back. The stream class (the export, served
// by the gateway itself) is not told, even with an adaptive limit.
func TestLimitsFollowTheNodesInRotation(t *testing.T) {
	a, b, c := newFakeModel(t, 8, time.Millisecond), newFakeModel(t, 8, time.Millisecond), newFakeModel(t, 8, time.Millisecond)
	cfg := testConfig(a.addr(), b.addr(), c.addr())
	cfg.Upstream.HealthInterval = 20 * time.Millisecond
	cfg.Classes.AI.Limiter = admit.LimiterConfig{Algorithm: admit.AlgoGradient, Limit: 30, Min: 1, Max: 300}
	cfg.Classes.Agent.Limiter = admit.LimiterConfig{Algorithm: admit.AlgoGradient, Limit: 12, Min: 1, Max: 120}
	cfg.Classes.Stream.Limiter = admit.LimiterConfig{Algorithm: admit.AlgoGradient, Limit: 40, Min: 1, Max: 400}
	s := startServer(t, cfg)
	g := s.G
	limits := func() (ai, agent, export int) {
		return g.bulkheads[classAI].Limiter().Limit(), g.bulkheads[classAgent].Limiter().Limit(), g.bulkheads[classStream].Limiter().Limit()
	}

	a.srv.Close() // the process is gone: connection refused
	eventually(t, 5*time.Second, func() bool { ai, agent, _ := limits(); return ai == 20 && agent == 8 }, "limits at 2 of 3 nodes")
	b.sick.Store(true)
	eventually(t, 5*time.Second, func() bool { ai, agent, _ := limits(); return ai == 10 && agent == 4 }, "limits at 1 of 3 nodes")
	b.sick.Store(false)
	eventually(t, 5*time.Second, func() bool { ai, agent, _ := limits(); return ai == 20 && agent == 8 }, "limits back at 2 of 3 nodes")
	if _, _, got := limits(); got != 40 {
		t.Errorf("stream class limit %d, want 40 (not served by the nodes: not told)", got)
	}
	if n := g.pool.InRotation(); n != 2 {
		t.Errorf("InRotation %d, want 2", n)
	}
}

// With static limits nothing is resized, and the log does not say so:
// the pool's health line shows the node out, no limiter line follows.
func TestStaticLimitsAreNotResized(t *testing.T) {
	a, b := newFakeModel(t, 8, time.Millisecond), newFakeModel(t, 8, time.Millisecond)
	cfg := testConfig(a.addr(), b.addr())
	cfg.Upstream.HealthInterval = 20 * time.Millisecond
	cfg.Classes.AI.Limiter = admit.LimiterConfig{Algorithm: admit.AlgoStatic, Limit: 30, Min: 1, Max: 30}
	cfg.Classes.Agent.Limiter = admit.LimiterConfig{Algorithm: admit.AlgoStatic, Limit: 12, Min: 1, Max: 12}
	var logs syncbuf.Buffer
	s := startServer(t, cfg, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	a.srv.Close()
	eventually(t, 5*time.Second, func() bool { return s.G.pool.InRotation() == 1 }, "one node in rotation")
	eventually(t, 5*time.Second, func() bool { return strings.Contains(logs.String(), "upstream health") }, "the pool's health line")
	if got := s.G.bulkheads[classAI].Limiter().Limit(); got != 30 {
		t.Errorf("static ai limit %d, want 30", got)
	}
	if strings.Contains(logs.String(), "limiter resized") {
		t.Errorf("a static limit was logged as resized:\n%s", logs.String())
	}
}
