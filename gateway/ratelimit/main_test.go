package ratelimit

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
	"github.com/levee-lab/levee/internal/redistest"
)

// TestMain lets redistest build the embedded server (`levee redis`) and
// stops the shared cluster at the end.
func TestMain(m *testing.M) {
	code := redistest.Run(m)
	shared.mu.Lock()
	if shared.cluster != nil {
		shared.cluster.Kill()
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// shared is one Redis Cluster (three masters) for the tests that only read
// it or write keys of their own; tests that kill nodes start their own.
var shared struct {
	mu      sync.Mutex
	cluster *redisproc.Cluster // guarded by mu
	dir     string             // guarded by mu
	err     error              // guarded by mu
}

// sharedCluster starts the shared cluster on first use. A missing
// redis-server skips the test (fails it when CI is set).
func sharedCluster(t testing.TB) *redisproc.Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil && shared.err == nil {
		shared.dir, shared.err = os.MkdirTemp("", "levee-ratelimit-cluster-")
		if shared.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			shared.cluster, shared.err = redisproc.StartCluster(ctx, filepath.Join(shared.dir, "c"), redisproc.ClusterSpec{Masters: 3})
			cancel()
		}
	}
	if shared.err != nil {
		redistest.MissingServer(t, shared.err)
		t.Fatalf("shared cluster: %v", shared.err)
	}
	return shared.cluster
}

// backend is one kind of shared store the Redis tests run against: it
// starts the server(s) and returns the URL a store connects to.
type backend struct {
	name  string
	start func(t testing.TB) string
}

var (
	serverBackend   = backend{"server", func(t testing.TB) string { return redistest.Start(t).URL() }}
	embeddedBackend = backend{"embedded", func(t testing.TB) string { return redistest.StartEmbedded(t).URL() }}
	// three masters, no replicas: the least a cluster takes
	clusterBackend = backend{"cluster", func(t testing.TB) string {
		return redistest.StartCluster(t, redisproc.ClusterSpec{Masters: 3}).URL()
	}}
	backends = []backend{serverBackend, embeddedBackend, clusterBackend}
)
