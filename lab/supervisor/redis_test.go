package supervisor

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redistest"
)

// TestStartRedisUsesTheLabSpawner: the lab's Redis is started like every
// other child (its own process group, tied to the lab's life); the process
// mechanics are tested in internal/redisproc.
func TestStartRedisUsesTheLabSpawner(t *testing.T) {
	redistest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := StartRedis(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	pid := r.PID()
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Fatalf("redis pid %d in process group %d (err %v), want its own group", pid, pgid, err)
	}
}

func TestStartRedisWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty directory: no redis-server
	_, err := StartRedis(context.Background(), t.TempDir())
	if !errors.Is(err, ErrNoRedisServer) {
		t.Fatalf("err %v, want ErrNoRedisServer", err)
	}
	if !strings.Contains(err.Error(), "redis-server") || !strings.Contains(err.Error(), "install") {
		t.Errorf("error %q should name redis-server and how to install it", err)
	}
}
