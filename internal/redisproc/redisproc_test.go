package redisproc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needRedisServer skips when redis-server is missing, except under CI
// (env CI set), where that is a failure.
func needRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(Binary); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not on PATH and CI is set: install it (apt-get install -y redis-server)", Binary)
		}
		t.Skipf("%s not on PATH (install it, e.g. apt-get install -y redis-server): %v", Binary, err)
	}
}

func TestProcessLifecycle(t *testing.T) {
	needRedisServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "logs")
	r, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })

	if !r.Running() || r.PID() == 0 {
		t.Fatalf("after start: running %v pid %d", r.Running(), r.PID())
	}
	if !strings.HasPrefix(r.URL(), "redis://127.0.0.1:") {
		t.Errorf("URL %q", r.URL())
	}
	if err := Ping(r.Addr(), time.Second); err != nil {
		t.Fatalf("PING after start: %v", err)
	}
	if _, err := os.Stat(r.LogPath()); err != nil {
		t.Errorf("log file: %v", err)
	}
	url := r.URL()

	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(r.Addr(), 100*time.Millisecond); err == nil {
		t.Error("PING answered while paused")
	}
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}

	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if r.Running() || r.PID() != 0 {
		t.Fatal("still running after Kill")
	}
	if err := Ping(r.Addr(), 200*time.Millisecond); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if err := r.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if err := r.Pause(); err == nil {
		t.Error("Pause of a killed child succeeded")
	}

	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r.URL() != url {
		t.Errorf("URL changed across Restart: %q → %q", url, r.URL())
	}
	if err := Ping(r.Addr(), time.Second); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	// Restart of a running child replaces it.
	pid := r.PID()
	if err := r.Restart(ctx); err != nil || r.PID() == pid || !r.Running() {
		t.Fatalf("Restart while running: err %v pid %d → %d running %v", err, pid, r.PID(), r.Running())
	}

	// Stop is graceful and also works on a paused child.
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if r.Running() {
		t.Fatal("running after Stop")
	}
	if took := time.Since(start); took >= StopGrace {
		t.Errorf("Stop of a paused child took %v: SIGTERM was not delivered, SIGKILL did it", took)
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStartWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty directory: no redis-server
	_, err := Start(context.Background(), t.TempDir())
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "redis-server") || !strings.Contains(err.Error(), "install") {
		t.Errorf("error %q should name redis-server and how to install it", err)
	}
}

func TestStartBadDir(t *testing.T) {
	needRedisServer(t)
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), filepath.Join(f, "sub")) // a path under a file
	if err == nil || !strings.Contains(err.Error(), "log dir") {
		t.Fatalf("err %v, want a log dir error", err)
	}
}
