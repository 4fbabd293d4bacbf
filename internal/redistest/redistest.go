// Package redistest starts Redis child processes for tests.
//
// Tests that need Redis call Start, which runs redis-server (through package
// redisproc) on a free loopback port with persistence off and stops it when
// the test ends. When redis-server is not on PATH the test is skipped with a
// message saying how to install it — unless the environment variable CI is
// set, where a missing redis-server fails the test instead, so CI never
// passes by skipping.
//
// StartEmbedded runs the embedded Redis-protocol server instead, which needs
// nothing installed: its child process is `levee redis`, built once per test
// binary without the race detector (a race-instrumented server is several
// times slower, and it is not the code under test), so the package's
// TestMain must call Main, which removes the build afterwards.
// StartCluster runs a Redis Cluster of redis-server processes.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
)

// Binary is the redis-server executable Start looks up on PATH.
const Binary = redisproc.Binary

// Ping sends PING to addr and reports whether PONG came back within timeout.
var Ping = redisproc.Ping

// restartTimeout bounds a Restart.
const restartTimeout = 20 * time.Second

// Server is one redis-server child process whose failures fail the test.
// Its port stays the same across Kill and Restart, so clients can reconnect
// to URL after a restart. Methods are safe for concurrent use.
type Server struct {
	t testing.TB
	*redisproc.Process
}

// levee is the levee binary StartEmbedded runs, built on first use.
var levee struct {
	sync.Mutex
	main bool   // Main was called
	dir  string // holds the binary; removed by Main
	bin  string
	err  error
}

// Main runs the tests of a package that uses StartEmbedded: call it as the
// whole of TestMain, or call Run from it.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs the tests (m.Run) and removes the levee binary StartEmbedded
// built, and returns m.Run's code. It also serves as the embedded child
// when redisproc.SelfCommand started this binary.
func Run(m *testing.M) int {
	redisproc.RunChildIfAsked()
	levee.Lock()
	levee.main = true
	levee.Unlock()
	code := m.Run()
	levee.Lock()
	if levee.dir != "" {
		os.RemoveAll(levee.dir)
	}
	levee.Unlock()
	return code
}

// LeveeBinary builds cmd/levee without -race (once per test binary; see
// Main) and returns its path. Build it before hiding PATH: without a C
// compiler on PATH the build would redo every package without cgo.
func LeveeBinary(t testing.TB) string {
	t.Helper()
	bin, err := leveeBinary()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return bin
}

// leveeBinary builds cmd/levee (without -race) on first use and returns its
// path.
func leveeBinary() (string, error) {
	levee.Lock()
	defer levee.Unlock()
	if !levee.main {
		return "", errors.New("StartEmbedded needs TestMain to call redistest.Main (or Run): it builds the levee binary and removes it after the tests")
	}
	if levee.bin == "" && levee.err == nil {
		levee.dir, levee.err = os.MkdirTemp("", "levee-redistest-")
		if levee.err == nil {
			bin := filepath.Join(levee.dir, "levee")
			cmd := exec.Command("go", "build", "-o", bin, "github.com/levee-lab/levee/cmd/levee")
			if out, err := cmd.CombinedOutput(); err != nil {
				levee.err = fmt.Errorf("build levee for the embedded server: %w\n%s", err, out)
			} else {
				levee.bin = bin
			}
		}
	}
	return levee.bin, levee.err
}

// Start runs redis-server on a free loopback port and waits until it answers
// PING. The server is killed when the test ends. See the package comment for
// what happens when redis-server is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartKind(t, redisproc.KindServer)
}

// StartEmbedded runs the embedded Redis-protocol server in its own process
// (`levee redis`; see Main) on a free loopback port. It needs nothing
// installed. The server is killed when the test ends.
func StartEmbedded(t testing.TB) *Server {
	t.Helper()
	return StartKind(t, redisproc.KindEmbedded)
}

// StartKind starts a server of kind: Start or StartEmbedded.
func StartKind(t testing.TB, kind redisproc.Kind) *Server {
	t.Helper()
	var (
		p   *redisproc.Process
		err error
	)
	switch kind {
	case redisproc.KindServer:
		p, err = redisproc.Start(context.Background(), t.TempDir())
	case redisproc.KindEmbedded:
		bin, berr := leveeBinary()
		if berr != nil {
			t.Fatalf("redistest: %v", berr)
		}
		p, err = redisproc.StartEmbedded(context.Background(), t.TempDir(), redisproc.WithEmbeddedCommand(redisproc.LeveeCommand(bin)))
	default:
		t.Fatalf("redistest: unknown kind %q", kind)
	}
	if err != nil {
		MissingServer(t, err)
		t.Fatalf("redistest: %v", err)
	}
	s := &Server{t: t, Process: p}
	t.Cleanup(s.Kill)
	return s
}

// MissingServer ends the test when err says redis-server is not on PATH:
// a skip saying how to install it, or a failure when CI is set. Otherwise
// it returns.
func MissingServer(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, redisproc.ErrNotFound) {
		return
	}
	msg := fmt.Sprintf("redistest: %v", err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " — CI is set, so a missing redis-server is a failure, not a skip")
	}
	t.Skip(msg)
}

// Kill SIGKILLs the server (paused or not) and waits for it to exit; killing
// a stopped server does nothing. All data is lost: there is no persistence.
func (s *Server) Kill() {
	if err := s.Process.Kill(); err != nil {
		s.t.Errorf("redistest: kill: %v", err)
	}
}

// Restart starts the server again on the same port and waits for PING. It
// fails the test when the server cannot come back.
func (s *Server) Restart() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	if err := s.Process.Restart(ctx); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

// Pause sends SIGSTOP: the server keeps its connections but answers nothing,
// which is what a hung or overloaded Redis looks like to a client. Resume
// undoes it. Kill works on a paused server too.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.Process.Pause(); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

// Resume sends SIGCONT to a paused server.
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.Process.Resume(); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

// clusterTimeout bounds StartCluster and the waits of Cluster's helpers.
const clusterTimeout = 60 * time.Second

// Cluster is a Redis Cluster of redis-server children whose failures fail
// the test.
type Cluster struct {
	t testing.TB
	*redisproc.Cluster
}

// StartCluster starts a Redis Cluster (see redisproc.StartCluster), killed
// when the test ends. A missing redis-server skips the test, or fails it
// when CI is set.
func StartCluster(t testing.TB, spec redisproc.ClusterSpec) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	c, err := redisproc.StartCluster(ctx, t.TempDir(), spec)
	if err != nil {
		MissingServer(t, err)
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(c.Kill)
	return &Cluster{t: t, Cluster: c}
}

// KillNode SIGKILLs node i.
func (c *Cluster) KillNode(i int) {
	c.t.Helper()
	if err := c.Node(i).Kill(); err != nil {
		c.t.Fatalf("redistest: kill node %d: %v", i, err)
	}
}

// RestartNode starts node i again on its port and waits until the cluster
// is healthy again.
func (c *Cluster) RestartNode(i int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := c.Node(i).Restart(ctx); err != nil {
		c.t.Fatalf("redistest: restart node %d: %v", i, err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		c.t.Fatalf("redistest: after restarting node %d: %v", i, err)
	}
}

// MasterOf is the index of the node serving key's slot now.
func (c *Cluster) MasterOf(key string) int {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	m, err := c.Cluster.MasterOf(ctx, key)
	if err != nil {
		c.t.Fatalf("redistest: %v", err)
	}
	return m
}

// WaitFailover waits until a replica serves the slots of the killed node
// and returns its index.
func (c *Cluster) WaitFailover(killed int) int {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	by, err := c.Cluster.WaitFailover(ctx, killed)
	if err != nil {
		c.t.Fatalf("redistest: %v", err)
	}
	return by
}
