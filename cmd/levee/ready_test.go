package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// TestServersAnnounceOnceAndExitZero holds every server process to
// docs/CONTRACTS.md's first section, as the supervisor relies on it: once
// its listeners are bound it prints exactly one line on stdout, the ready
// line of its kind (the fake model's "listen" its first node and "admin"
// the same port, the gateway's admin a port of its own, Redis none), every
// address it names accepts connections, nothing else ever reaches stdout
// (logs go to stderr, even at debug level), and SIGTERM ends it with exit 0.
func TestServersAnnounceOnceAndExitZero(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts child processes")
	}
	bin := buildLevee(t)
	// An upstream nobody serves: the gateway starts and drains all the same.
	conf := "listen: 127.0.0.1:0\nadmin: 127.0.0.1:0\nupstream:\n  nodes: [\"http://127.0.0.1:9\"]\n"
	cfg := writeGatewayConfig(t, conf)
	tests := []struct {
		kind  string
		args  []string
		check func(r wire.Ready) string // what is wrong with r, or ""
	}{
		{wire.KindGateway, []string{"gateway", "--config", cfg, "--log-level", "debug"}, func(r wire.Ready) string {
			if r.Admin == "" || r.Admin == r.Listen || r.Nodes != nil {
				return "want an admin address of its own and no nodes"
			}
			return ""
		}},
		{wire.KindFakeModel, []string{"fakemodel", "--nodes", "2", "--listen", "127.0.0.1:0"}, func(r wire.Ready) string {
			if len(r.Nodes) != 2 || r.Nodes[0] != r.Listen || r.Admin != r.Listen {
				return "want 2 nodes, listen and admin the first"
			}
			return ""
		}},
		{wire.KindRedis, []string{"redis"}, func(r wire.Ready) string {
			if r.Admin != "" || r.Nodes != nil {
				return "want no admin address and no nodes"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = append(os.Environ(), "LEVEE_ADMIN_TOKEN=test-token-0123456789")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			first := make(chan string, 1)
			rest := make(chan string, 1)
			go func() {
				br := bufio.NewReader(stdout)
				line, _ := br.ReadString('\n')
				first <- line
				more, _ := io.ReadAll(br) // until the process closes stdout
				rest <- string(more)
			}()
			var line string
			select {
			case line = <-first:
			case <-time.After(30 * time.Second): // hang guard
				t.Fatalf("no ready line in 30 s; stderr:\n%s", stderr.String())
			}
			r, ok := wire.ParseReady([]byte(line))
			if !ok || r.Kind != tt.kind || r.PID != cmd.Process.Pid {
				t.Fatalf("first stdout line %q: want the %s ready line with pid %d", line, tt.kind, cmd.Process.Pid)
			}
			if msg := tt.check(r); msg != "" {
				t.Fatalf("ready line %q: %s", line, msg)
			}
			for _, addr := range append([]string{r.Listen, r.Admin}, r.Nodes...) {
				if addr == "" {
					continue
				}
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Fatalf("ready line names %s, which refuses: %v", addr, err)
				}
				c.Close()
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				more := <-rest
				if more != "" {
					t.Errorf("stdout after the ready line: %q", more)
				}
				done <- cmd.Wait()
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("exit after SIGTERM: %v, want 0; stderr:\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second): // hang guard
				t.Fatalf("still running 30 s after SIGTERM; stderr:\n%s", stderr.String())
			}
		})
	}
}
