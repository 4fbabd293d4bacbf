package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
)

// needRedisServer skips when redis-server is missing, except under CI
// (env CI set), where that is a failure.
func needRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(redisproc.Binary); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not on PATH and CI is set: install it (apt-get install -y redis-server)", redisproc.Binary)
		}
		t.Skipf("%s not on PATH (install it, e.g. apt-get install -y redis-server): %v", redisproc.Binary, err)
	}
}

// TestStartRedisUsesTheLabSpawner: the lab's Redis is started like every
// other child (its own process group, tied to the lab's life); the process
// mechanics are tested in internal/redisproc.
func TestStartRedisUsesTheLabSpawner(t *testing.T) {
	needRedisServer(t)
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
