package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// `levee redis` is the embedded server the lab starts when redis-server is
// missing: its own process, with the children's ready line, running Lua, and
// killed and restarted on the same port like redis-server.
func TestRedisCommandIsAChildProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts child processes")
	}
	bin := buildLevee(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := redisproc.StartEmbedded(ctx, t.TempDir(), redisproc.WithEmbeddedCommand(redisproc.LeveeCommand(bin)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer c.Close()
	script := redis.NewScript("return redis.call('INCR', KEYS[1])")
	if n, err := script.Run(ctx, c, []string{"k"}).Int(); err != nil || n != 1 {
		t.Fatalf("script: %d %v", n, err)
	}
	port := r.Port()
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after SIGKILL")
	}
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Port() != port {
		t.Fatalf("port %d → %d across the restart", port, r.Port())
	}
	// The new process is empty and has no scripts: EVALSHA gets NOSCRIPT,
	// Run falls back to EVAL.
	if n, err := script.Run(ctx, c, []string{"k"}).Int(); err != nil || n != 1 {
		t.Fatalf("script after restart: %d %v, want 1 (state lost with the process)", n, err)
	}
	if err := r.Stop(); err != nil || r.Running() {
		t.Fatalf("Stop (SIGTERM): %v, running %v", err, r.Running())
	}
}

func TestRedisCommandBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"redis", "--listen", "0.0.0.0:6379"}, "loopback"},
		{[]string{"redis", "--listen", "6379"}, "--listen"},
		{[]string{"redis", "extra"}, "unexpected argument"},
		{[]string{"redis", "--port", "1"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		var stdout, stderr strings.Builder
		if code := dispatch(tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("levee %v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}
