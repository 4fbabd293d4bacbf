package redisproc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

func TestMain(m *testing.M) {
	RunChildIfAsked() // the embedded children of these tests are this binary
	os.Exit(m.Run())
}

// starters are the two kinds behind the one Process API.
var starters = []struct {
	kind  Kind
	start func(t *testing.T, ctx context.Context, dir string) (*Process, error)
}{
	{KindServer, func(t *testing.T, ctx context.Context, dir string) (*Process, error) {
		needRedisServer(t)
		return Start(ctx, dir)
	}},
	{KindEmbedded, func(t *testing.T, ctx context.Context, dir string) (*Process, error) {
		return StartEmbedded(ctx, dir, WithEmbeddedCommand(SelfCommand))
	}},
}

func TestProcessLifecycle(t *testing.T) {
	for _, st := range starters {
		t.Run(string(st.kind), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := st.start(t, ctx, filepath.Join(t.TempDir(), "logs"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Kill() })
			if r.Kind() != st.kind {
				t.Errorf("Kind() = %q, want %q", r.Kind(), st.kind)
			}
			testLifecycle(t, ctx, r)
		})
	}
}

func testLifecycle(t *testing.T, ctx context.Context, r *Process) {

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

// Without redis-server on PATH, StartAuto gives the embedded server: a
// real Redis-protocol server in its own process that runs Lua and TIME.
func TestStartAutoWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty directory: no redis-server
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := StartAuto(ctx, t.TempDir(), WithEmbeddedCommand(SelfCommand))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	if r.Kind() != KindEmbedded {
		t.Fatalf("Kind() = %q without redis-server, want %q", r.Kind(), KindEmbedded)
	}
	if r.PID() == os.Getpid() || r.PID() == 0 {
		t.Fatalf("PID %d: the embedded server must be its own process", r.PID())
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	got, err := c.Eval(ctx, "local t = redis.call('TIME'); redis.call('SET', KEYS[1], t[1]); return redis.call('GET', KEYS[1])", []string{"k"}).Text()
	if err != nil {
		t.Fatalf("EVAL: %v", err)
	}
	if sec, err := strconv.ParseInt(got, 10, 64); err != nil || time.Since(time.Unix(sec, 0)).Abs() > time.Hour {
		t.Fatalf("EVAL of TIME gave %q, want this machine's unix time", got)
	}
}

func TestStartAutoPrefersRedisServer(t *testing.T) {
	needRedisServer(t)
	r, err := StartAuto(context.Background(), t.TempDir(), WithEmbeddedCommand(SelfCommand))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	if r.Kind() != KindServer {
		t.Fatalf("Kind() = %q with redis-server on PATH, want %q", r.Kind(), KindServer)
	}
}

// A command that never prints the ready line fails the start with a message
// that says so and shows the child's log, instead of hanging.
func TestStartEmbeddedBadCommand(t *testing.T) {
	tests := []struct {
		name    string
		command func(listen string) *exec.Cmd
		want    string
	}{
		{"exits at once", func(string) *exec.Cmd { return exec.Command("sh", "-c", "echo broken >&2; exit 3") }, "exited before printing its ready line; its log ends: broken"},
		{"not loopback", func(string) *exec.Cmd {
			return exec.Command("sh", "-c", `echo '{"levee_ready":{"kind":"redis","listen":"10.1.2.3:6379","pid":1}}'; sleep 5`)
		}, "not loopback"},
		{"missing binary", func(string) *exec.Cmd { return exec.Command(filepath.Join(t.TempDir(), "nope")) }, "start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := StartEmbedded(ctx, t.TempDir(), WithEmbeddedCommand(tt.command))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestReadyLineRoundTrip(t *testing.T) {
	addr, ok := ParseReadyLine(append(ReadyLine("127.0.0.1:41234"), '\n'))
	if !ok || addr != "127.0.0.1:41234" {
		t.Fatalf("ParseReadyLine(ReadyLine) = %q %v", addr, ok)
	}
	for _, line := range []string{
		"", "PONG", `{"levee_ready":{"kind":"gateway","listen":"127.0.0.1:1"}}`, `{"levee_ready":{"kind":"redis"}}`, `{"levee_ready":`,
	} {
		if addr, ok := ParseReadyLine([]byte(line)); ok {
			t.Errorf("ParseReadyLine(%q) = %q, true; want false", line, addr)
		}
	}
}

// TestRestartOnATakenPort: while the child is down another redis-server
// takes its port. Restart must not take that server's PONG for its own
// child's (which failed to bind and exits): it fails, saying the port is
// another process's. It used to return nil, leaving a Process whose child
// was dead and whose Kill and Pause missed the server the clients talked
// to — a redis_outage that no longer kills anything.
func TestRestartOnATakenPort(t *testing.T) {
	needRedisServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	other := exec.Command(Binary, "--port", strconv.Itoa(r.Port()), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	for Ping(r.Addr(), 200*time.Millisecond) != nil {
		if ctx.Err() != nil {
			t.Fatal("the other redis-server never answered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	err = r.Restart(ctx)
	if err == nil {
		t.Fatalf("Restart on a port another redis-server (pid %d) holds returned nil; child running %v", other.Process.Pid, r.Running())
	}
	if !strings.Contains(err.Error(), "another process") || !strings.Contains(err.Error(), strconv.Itoa(other.Process.Pid)) {
		t.Errorf("error %q should say another process (pid %d) holds the port", err, other.Process.Pid)
	}
	if r.Running() || r.PID() != 0 {
		t.Errorf("after the failed Restart: running %v pid %d, want no child", r.Running(), r.PID())
	}
}

// TestAddrDuringRestart: Process's methods are safe for concurrent use, so
// a reader of Addr and URL (the lab's dashboard, its summary) may run
// while a fault restarts the child. (Run with -race: an embedded child's
// restart used to write the port it had already, racing with them.)
func TestAddrDuringRestart(t *testing.T) {
	for _, st := range starters {
		t.Run(string(st.kind), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := st.start(t, ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Kill() })
			want := r.URL()
			// reads counts the reader's reads; the counts taken as Restart
			// begins and ends show that some overlapped it (Restart waits
			// for the new child's ready line, parked: the reader runs).
			var reads atomic.Int64
			done, first := make(chan struct{}), make(chan struct{})
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				for {
					if r.URL() != want || r.Addr() == "" || r.Port() == 0 {
						t.Errorf("URL %q during Restart, want %q", r.URL(), want)
					}
					if reads.Add(1) == 1 {
						close(first)
					}
					select {
					case <-done:
						return
					case <-time.After(100 * time.Microsecond):
					}
				}
			}()
			<-first
			before := reads.Load()
			err = r.Restart(ctx)
			during := reads.Load() - before
			close(done)
			<-stopped
			if err != nil {
				t.Fatal(err)
			}
			if during == 0 {
				t.Fatal("no read overlapped the restart: the test checked nothing")
			}
		})
	}
}
