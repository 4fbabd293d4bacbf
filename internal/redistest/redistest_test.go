package redistest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
)

func TestServerLifecycle(t *testing.T) {
	for _, kind := range []redisproc.Kind{redisproc.KindServer, redisproc.KindEmbedded} {
		t.Run(string(kind), func(t *testing.T) { testLifecycle(t, StartKind(t, kind)) })
	}
}

func testLifecycle(t *testing.T, s *Server) {
	if err := Ping(s.Addr(), time.Second); err != nil {
		t.Fatalf("fresh server: %v", err)
	}
	if got, want := s.URL(), "redis://"+s.Addr()+"/0"; got != want {
		t.Errorf("URL() = %q, want %q", got, want)
	}
	if !s.Running() {
		t.Fatal("Running() = false after Start")
	}

	s.Pause()
	if err := Ping(s.Addr(), 100*time.Millisecond); err == nil {
		t.Error("PING answered while paused")
	}
	s.Resume()
	if err := Ping(s.Addr(), time.Second); err != nil {
		t.Fatalf("after Resume: %v", err)
	}

	port := s.Port()
	s.Kill()
	if s.Running() {
		t.Error("Running() = true after Kill")
	}
	if err := Ping(s.Addr(), 200*time.Millisecond); err == nil {
		t.Fatal("PING answered after Kill")
	}
	s.Kill() // killing a stopped server is a no-op

	s.Restart()
	if s.Port() != port {
		t.Errorf("port changed across Restart: %d → %d", port, s.Port())
	}
	if err := Ping(s.Addr(), time.Second); err != nil {
		t.Fatalf("after Restart: %v", err)
	}
}

func TestTwoServersGetDistinctPorts(t *testing.T) {
	a, b := Start(t), StartEmbedded(t)
	if a.Port() == b.Port() {
		t.Fatalf("both servers on port %d", a.Port())
	}
}

// The embedded server needs nothing on PATH.
func TestEmbeddedWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s := StartEmbedded(t)
	if s.Kind() != redisproc.KindEmbedded {
		t.Fatalf("kind %q", s.Kind())
	}
	if err := Ping(s.Addr(), time.Second); err != nil {
		t.Fatal(err)
	}
}

// fakeTB records how Start ends the test when redis-server is missing.
type fakeTB struct {
	testing.TB
	ended string // "skip" or "fatal"
	msg   string
}

type endTest struct{}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(args ...any) {
	f.ended, f.msg = "skip", fmt.Sprint(args...)
	panic(endTest{})
}
func (f *fakeTB) Fatal(args ...any) {
	f.ended, f.msg = "fatal", fmt.Sprint(args...)
	panic(endTest{})
}
func (f *fakeTB) Fatalf(format string, args ...any) { f.Fatal(fmt.Sprintf(format, args...)) }

func startWithoutRedis(t *testing.T, ci string, start func(testing.TB)) *fakeTB {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", ci)
	f := &fakeTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(endTest); !ok {
					panic(r)
				}
			}
		}()
		start(f)
	}()
	return f
}

// Start and StartCluster need redis-server: a skip outside CI, a failure
// under CI.
func TestMissingRedisServer(t *testing.T) {
	for name, start := range map[string]func(testing.TB){
		"Start":        func(t testing.TB) { Start(t) },
		"StartCluster": func(t testing.TB) { StartCluster(t, redisproc.ClusterSpec{Masters: 3}) },
	} {
		if f := startWithoutRedis(t, "", start); f.ended != "skip" || !strings.Contains(f.msg, "apt-get install") {
			t.Errorf("%s outside CI: ended %q with %q, want a skip saying how to install", name, f.ended, f.msg)
		}
		if f := startWithoutRedis(t, "true", start); f.ended != "fatal" || !strings.Contains(f.msg, "CI") {
			t.Errorf("%s in CI: ended %q with %q, want a failure", name, f.ended, f.msg)
		}
	}
}
