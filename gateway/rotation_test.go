package gateway

import (
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
)

// The model classes' adaptive limits follow the nodes in rotation: a node
// whose process is gone (its port refuses the health check) takes a third
// of the limit with it, and a node that fails its checks another; passing
// them again brings its share back. The static standard class is not
// told.
func TestLimitsFollowTheNodesInRotation(t *testing.T) {
	a, b, c := newFakeModel(t, 8, time.Millisecond), newFakeModel(t, 8, time.Millisecond), newFakeModel(t, 8, time.Millisecond)
	cfg := testConfig(a.addr(), b.addr(), c.addr())
	cfg.Upstream.HealthInterval = 20 * time.Millisecond
	cfg.Classes.AI.Limiter = admit.LimiterConfig{Algorithm: admit.AlgoGradient, Limit: 30, Min: 1, Max: 300}
	cfg.Classes.Agent.Limiter = admit.LimiterConfig{Algorithm: admit.AlgoGradient, Limit: 12, Min: 1, Max: 120}
	s := startServer(t, cfg)
	g := s.G
	limits := func() (ai, agent, standard int) {
		return g.bulkheads[classAI].Limiter().Limit(), g.bulkheads[classAgent].Limiter().Limit(), g.bulkheads[classStandard].Limiter().Limit()
	}
	_, _, std := limits()

	a.srv.Close() // the process is gone: connection refused
	eventually(t, 5*time.Second, func() bool { ai, agent, _ := limits(); return ai == 20 && agent == 8 }, "limits at 2 of 3 nodes")
	b.sick.Store(true)
	eventually(t, 5*time.Second, func() bool { ai, agent, _ := limits(); return ai == 10 && agent == 4 }, "limits at 1 of 3 nodes")
	b.sick.Store(false)
	eventually(t, 5*time.Second, func() bool { ai, agent, _ := limits(); return ai == 20 && agent == 8 }, "limits back at 2 of 3 nodes")
	if _, _, got := limits(); got != std {
		t.Errorf("standard class limit %d, want %d (static: not told)", got, std)
	}
	if n := g.pool.InRotation(); n != 2 {
		t.Errorf("InRotation %d, want 2", n)
	}
}
