package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
	"github.com/levee-lab/levee/internal/redistest"
)

// On a machine without redis-server, `redis: auto` (redisproc.StartAuto, as
// the lab calls it) gives the embedded server, and it is a shared store for
// gateways as they open it from configuration: one limit decided by the
// Redis scripts, and a counted fallback when it is killed.
func TestAutoStoreWithoutRedisServer(t *testing.T) {
	bin := redistest.LeveeBinary(t) // built before PATH is hidden
	t.Setenv("PATH", t.TempDir())   // an empty directory: no redis-server
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := redisproc.StartAuto(ctx, t.TempDir(), redisproc.WithEmbeddedCommand(redisproc.LeveeCommand(bin)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Kill() })
	if srv.Kind() != redisproc.KindEmbedded {
		t.Fatalf("StartAuto without redis-server gave %q, want %q", srv.Kind(), redisproc.KindEmbedded)
	}
	rule := Rule{Algorithm: SlidingWindow, Limit: 4, Window: time.Minute}
	var stores []*Failover
	for range 2 { // two gateways
		s, closer, err := Open(StoreConfig{Kind: "redis", URL: srv.URL(), Share: 0.5, TimeoutMs: 1000})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closer.Close() })
		stores = append(stores, s.(*Failover))
	}
	admitted := 0
	for i := range 6 {
		d, err := stores[i%2].Allow(context.Background(), "tenant:ai", rule, 1, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 4 || stores[0].RemoteDecisions()+stores[1].RemoteDecisions() != 6 {
		t.Fatalf("admitted %d of 6 (remote %d %d), want the global 4, all decided by the embedded server", admitted, stores[0].RemoteDecisions(), stores[1].RemoteDecisions())
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if d, err := stores[0].Allow(context.Background(), "tenant:ai", rule, 1, time.Now()); err != nil || !d.Allowed || d.Limit != 2 || stores[0].Fallbacks() != 1 {
		t.Fatalf("with the embedded server killed: %+v %v, fallbacks %d; want a counted local decision on the share 2", d, err, stores[0].Fallbacks())
	}
}
