package load

import (
	"net"
	"testing"
	"time"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/internal/wire"
)

// TestCompletionsAndEmbeddingsRoutes: a mix of the completions and
// embeddings routes sends bodies a real fake model node accepts (it
// answers a bad body 400, an error outcome), and every request ends ok,
// counted under its route.
func TestCompletionsAndEmbeddingsRoutes(t *testing.T) {
	k := fakemodel.DefaultKnobs()
	k.Latency.Dist, k.Latency.FixedMs = fakemodel.DistFixed, 1
	k.TTFTMs, k.Slots = 1, 64
	node := startFakeNode(t, k)

	cfg := allRoutesConfig("http://" + node.Addr())
	cfg.Mix.Routes = map[string]float64{string(RouteCompletions): 1, string(RouteEmbeddings): 1}
	cfg.ClientTimeout = 10 * time.Second // only a broken request comes near it
	cfg.MaxOutstanding = 10000           // no generator_dropped on a slow machine
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, g, nil, 200, 300*time.Millisecond)
	tot := g.Totals()
	if tot.Offered == 0 || tot.Outcomes[wire.OutcomeOK.String()] != tot.Offered {
		t.Fatalf("offered %d, outcomes %v: want every one ok", tot.Offered, tot.Outcomes)
	}
	for _, r := range []Route{RouteCompletions, RouteEmbeddings} {
		if rt := tot.ByRoute[string(r)]; rt.Offered == 0 || rt.Outcomes[wire.OutcomeOK.String()] != rt.Offered {
			t.Errorf("route %s: %+v, want some offered and every one ok", r, rt)
		}
	}
}

// startFakeNode serves a real fake model node with knobs k on a loopback
// port until the test ends.
func startFakeNode(t *testing.T, k fakemodel.Knobs) *fakemodel.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	node, err := fakemodel.NewNode(ln, fakemodel.WithKnobs(k), fakemodel.WithAdminToken("load-test-admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = node.Serve() }()
	t.Cleanup(func() { node.Close() })
	return node
}
