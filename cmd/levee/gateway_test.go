package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGatewayBadAddressFlags: a --listen or --admin that is not host:port
// with a port from 0 to 65535 is a usage error (exit 2) naming the flag,
// found before anything starts: no admin token is made, nothing listens.
// (--admin bogus read "admin: "bogus" is not a loopback address; set
// admin_allow_remote", --listen bogus "gateway: listen: listen tcp: …",
// both exit 1 after the token line.)
func TestGatewayBadAddressFlags(t *testing.T) {
	t.Setenv("LEVEE_ADMIN_TOKEN", "")
	conf := "listen: 127.0.0.1:0\nadmin: 127.0.0.1:0\nupstream:\n  nodes: [\"http://127.0.0.1:9\"]\n"
	cfg := writeGatewayConfig(t, conf)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "bogus"}, `levee gateway: --listen "bogus": want host:port`},
		{[]string{"--admin", "bogus"}, `levee gateway: --admin "bogus": want host:port`},
		{[]string{"--listen", "127.0.0.1:99999"}, `levee gateway: --listen "127.0.0.1:99999": want a port from 0 to 65535`},
		{[]string{"--admin", "127.0.0.1:http"}, `levee gateway: --admin "127.0.0.1:http": want a port from 0 to 65535`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- runGateway(append([]string{"--config", cfg}, tt.args...), &stdout, &stderr) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("still running after 10 s: the gateway started")
			}
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", code, stderr.String(), tt.want)
			}
			if strings.Contains(stderr.String(), "admin token") || stdout.Len() > 0 {
				t.Errorf("started something before failing: stdout %q, stderr %q", stdout.String(), stderr.String())
			}
		})
	}
}

// TestGatewayRedisDownLogsInItsOwnFormat: a gateway whose Redis is down at
// start logs that once, as a warning in its own log format. go-redis's
// own lines ("redis: 2026/12/08 … pool.go:770: redis: connection pool:
// failed to dial …", one per dial: eight at the warm-up, then one per
// probe) went to the process's stderr beside the gateway's log, in another
// format and deaf to --log-level; they are debug lines of the gateway's
// log now.
func TestGatewayRedisDownLogsInItsOwnFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts a child process")
	}
	bin := buildLevee(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	conf := fmt.Sprintf("listen: 127.0.0.1:0\nadmin: 127.0.0.1:0\nkeys:\n  - {key: k0, tenant: t0, priority: P0}\n"+
		"upstream:\n  nodes: [\"http://127.0.0.1:9\"]\nratelimit:\n  store: {kind: redis, url: \"redis://%s/0\", share: 0.5}\n", dead)
	cfg := writeGatewayConfig(t, conf)
	for _, level := range []string{"info", "debug"} {
		t.Run(level, func(t *testing.T) {
			gw, _ := startServer(t, bin, "gateway", "--config", cfg, "--log-level", level)
			if err := gw.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			_ = gw.Wait()
			stderr := gw.Stderr.(*strings.Builder).String()
			warnings, dials := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if !strings.HasPrefix(line, "time=") {
					t.Errorf("a line not in the gateway's log format: %q", line)
				}
				if strings.Contains(line, "rate limit store unavailable") {
					warnings++
				}
				if strings.Contains(line, "failed to dial") {
					dials++
				}
			}
			if warnings != 1 {
				t.Errorf("%d warnings that the store is unavailable, want 1:\n%s", warnings, stderr)
			}
			if (level == "debug") != (dials > 0) {
				t.Errorf("--log-level %s: %d go-redis dial lines, want them at debug only:\n%s", level, dials, stderr)
			}
		})
	}
}

// writeGatewayConfig writes conf, a levee gateway --config file, into a
// folder of the test's and returns its path.
func writeGatewayConfig(t *testing.T, conf string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}
