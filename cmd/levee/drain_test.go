package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// startChild is startServer with the child's stderr going to stderr (a
// buffer read once the child has been waited for, or a pipe read as it
// comes).
func startChild(t *testing.T, bin string, stderr io.Writer, args ...string) (*exec.Cmd, wire.Ready) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "LEVEE_ADMIN_TOKEN=test-token-0123456789")
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	ready := make(chan wire.Ready, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if r, ok := wire.ParseReady(sc.Bytes()); ok {
				ready <- r
			}
		}
	}()
	select {
	case r := <-ready:
		return cmd, r
	case <-time.After(30 * time.Second): // hang guard
		t.Fatalf("levee %v: no ready line in 30 s", args)
	}
	return nil, wire.Ready{}
}

// TestDrainDeadlineCutsAndExitsZero: a request still in flight when the
// drain deadline passes (a gateway's drain_timeout, a fake model's
// --drain) is cut, no answer, and the process still exits 0 and logs
// "drain incomplete": the stop was asked for (docs/CONTRACTS.md).
func TestDrainDeadlineCutsAndExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts child processes")
	}
	bin := buildLevee(t)
	slow := []string{"fakemodel", "--nodes", "1", "--listen", "127.0.0.1:0", "--knobs", `{"latency":{"dist":"fixed","fixed_ms":600000}}`}
	for _, kind := range []string{wire.KindFakeModel, wire.KindGateway} {
		t.Run(kind, func(t *testing.T) {
			var nodeErr, gatewayErr bytes.Buffer
			node, nr := startChild(t, bin, &nodeErr, append(slow, "--drain", "300ms")...)
			target, r, stderr := node, nr, &nodeErr
			if kind == wire.KindGateway {
				conf := fmt.Sprintf("listen: 127.0.0.1:0\nadmin: 127.0.0.1:0\ndrain_timeout: 300ms\nupstream:\n  nodes: [\"http://%s\"]\n", nr.Listen)
				cfg := writeGatewayConfig(t, conf)
				target, r = startChild(t, bin, &gatewayErr, "gateway", "--config", cfg)
				stderr = &gatewayErr
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			answered := make(chan error, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.Listen+wire.PathPredict, strings.NewReader(`{"features":{"amount":1}}`))
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
					err = fmt.Errorf("answered %s", resp.Status)
				}
				answered <- err
			}()
			waitInService(t, "http://"+nr.Listen+wire.PathMetrics)
			if err := target.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waitErr := make(chan error, 1)
			go func() { waitErr <- target.Wait() }()
			select {
			case err := <-waitErr:
				if err != nil || !strings.Contains(stderr.String(), "drain incomplete") {
					t.Fatalf("exit %v, want 0 logging \"drain incomplete\"; stderr:\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second): // hang guard
				t.Fatal("still running 30 s after SIGTERM with a 300 ms drain")
			}
			if err := <-answered; err == nil || strings.HasPrefix(err.Error(), "answered") {
				t.Fatalf("request in flight at the drain deadline: %v, want its connection cut", err)
			}
		})
	}
}
