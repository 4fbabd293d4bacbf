package ratelimit

import (
	"testing"

	"github.com/levee-lab/levee/internal/redisproc"
	"github.com/levee-lab/levee/internal/redistest"
)

// TestMain serves the embedded Redis children of these tests: they are this
// test binary started again (redistest.StartEmbedded).
func TestMain(m *testing.M) { redistest.Main(m) }

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
