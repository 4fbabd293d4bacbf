package redistest

import (
	"strconv"
	"testing"
	"time"
)

func TestServerLifecycle(t *testing.T) {
	s := Start(t)
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
	a, b := Start(t), Start(t)
	if a.Port() == b.Port() {
		t.Fatalf("both servers on port %d", a.Port())
	}
}

func TestPingRefused(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := Ping("127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond); err == nil {
		t.Fatal("PING to a closed port succeeded")
	}
}
