package supervisor

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
	"github.com/levee-lab/levee/lab/experiment"
)

// TestStartRedisUsesTheLabSpawner: the lab's Redis is started like every
// other child (its own process group, tied to the lab's life); the process
// mechanics are tested in internal/redisproc.
func TestStartRedisUsesTheLabSpawner(t *testing.T) {
	redistest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := StartRedis(ctx, t.TempDir(), "/nonexistent/levee", experiment.RedisServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	if string(r.Kind()) != RedisKindServer {
		t.Errorf("kind %q, want %q", r.Kind(), RedisKindServer)
	}
	pid := r.PID()
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Fatalf("redis pid %d in process group %d (err %v), want its own group", pid, pgid, err)
	}
}

// Asking for redis-server (or a cluster, made of redis-servers) without
// it fails, saying what is missing and what runs without it.
func TestStartRedisWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty directory: no redis-server
	_, err := StartRedis(context.Background(), t.TempDir(), "/nonexistent/levee", experiment.RedisServer)
	if !errors.Is(err, ErrNoRedisServer) {
		t.Fatalf("err %v, want ErrNoRedisServer", err)
	}
	for _, want := range []string{"redis-server", "install", "embedded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q should say %q", err, want)
		}
	}
	_, err = StartRedisCluster(context.Background(), t.TempDir(), experiment.RedisSpec{Kind: experiment.RedisCluster, Masters: 3})
	if !errors.Is(err, ErrNoRedisServer) || !strings.Contains(err.Error(), "no embedded cluster") {
		t.Fatalf("cluster without redis-server: err %v, want ErrNoRedisServer saying there is no embedded cluster", err)
	}
}

// An embedded server that cannot start is an error, never a lab without
// Redis.
func TestStartRedisEmbeddedFailsClearly(t *testing.T) {
	_, err := StartRedis(context.Background(), t.TempDir(), "/nonexistent/levee", experiment.RedisEmbedded)
	if err == nil || !strings.Contains(err.Error(), "embedded") {
		t.Fatalf("err %v, want the embedded server's start error", err)
	}
}

// An external Redis is named by host:port in the summary and the events,
// never with its credentials.
func TestURLHostHidesCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"redis://user:s3cret@10.0.0.5:6379/0":                       "10.0.0.5:6379",
		"rediss://:s3cret@redis.example:6380":                       "redis.example:6380",
		"redis+cluster://u:s3cret@10.0.0.5:7000?addr=10.0.0.6:7000": "10.0.0.5:7000",
		"unix:///run/redis.sock":                                    "/run/redis.sock",
		"::not a url":                                               "?",
	} {
		if got := urlHost(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("urlHost(%q) = %q, want %q", in, got, want)
		}
	}
}
