package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/scrape"
)

// The levee binary the tests run, built once for the package (TestMain
// removes its folder): each test linked its own copy, seconds apiece on a
// busy machine.
var (
	leveeOnce  sync.Once
	leveeDir   string
	leveeBin   string
	leveeBuild error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if leveeDir != "" {
		os.RemoveAll(leveeDir)
	}
	os.Exit(code)
}

// buildLevee builds this command (once) and returns the binary.
func buildLevee(t *testing.T) string {
	t.Helper()
	leveeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "levee-cmd-test-")
		if err != nil {
			leveeBuild = err
			return
		}
		leveeDir = dir
		bin := filepath.Join(dir, "levee")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			leveeBuild = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		leveeBin = bin
	})
	if leveeBuild != nil {
		t.Fatal(leveeBuild)
	}
	return leveeBin
}

// startServer starts `levee args…`, reads its ready line and returns the
// process and the ready object. The process is killed at cleanup.
func startServer(t *testing.T, bin string, args ...string) (*exec.Cmd, map[string]any) {
	t.Helper()
	cmd := exec.Command(bin, args...)
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
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "levee_ready") {
				lines <- sc.Text()
			}
		}
	}()
	select {
	case l := <-lines:
		var ready struct {
			Ready map[string]any `json:"levee_ready"`
		}
		if err := json.Unmarshal([]byte(l), &ready); err != nil {
			t.Fatalf("ready line %q: %v", l, err)
		}
		return cmd, ready.Ready
	case <-time.After(30 * time.Second):
		t.Fatalf("levee %v: no ready line; stderr:\n%s", args, stderr.String())
	}
	return nil, nil
}

// TestGatewaySIGTERMDrains runs the real gateway in front of a real fake
// model node, both as child processes: a request in flight when SIGTERM
// arrives still gets its answer, new connections are refused afterwards, and
// the gateway exits 0.
func TestGatewaySIGTERMDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts child processes")
	}
	bin := buildLevee(t)
	_, node := startServer(t, bin, "fakemodel", "--nodes", "1", "--listen", "127.0.0.1:0",
		"--knobs", `{"latency":{"dist":"fixed","fixed_ms":3000}}`)
	conf := fmt.Sprintf("listen: 127.0.0.1:0\nadmin: 127.0.0.1:0\ndrain_timeout: 10s\nkeys:\n  - {key: k0, tenant: t0, priority: P0}\nupstream:\n  nodes: [\"http://%s\"]\n", node["listen"])
	cfg := writeGatewayConfig(t, conf)
	gw, ready := startServer(t, bin, "gateway", "--config", cfg)
	base := "http://" + ready["listen"].(string)

	type result struct {
		status  int
		outcome string
		body    string
		err     error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/predict", strings.NewReader(`{"features":{"amount":12}}`))
		req.Header.Set("Authorization", "Bearer k0")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{status: resp.StatusCode, outcome: resp.Header.Get("X-Levee-Outcome"), body: string(b)}
	}()
	// SIGTERM once the request is in service on the node (it holds its slot
	// for 3 s), not after a guessed sleep.
	waitInService(t, "http://"+node["listen"].(string)+wire.PathMetrics)
	if err := gw.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.status != http.StatusOK || r.outcome != "ok" {
		t.Fatalf("in-flight request during drain: status %d outcome %q err %v body %s", r.status, r.outcome, r.err, r.body)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- gw.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("gateway exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not exit within 20 s of SIGTERM")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("gateway still answers after exiting")
	}
}

// waitInService waits until the fake model node at metricsURL has a request
// in service.
func waitInService(t *testing.T, metricsURL string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		f, err := scrape.Scrape(ctx, http.DefaultClient, metricsURL)
		cancel()
		if err == nil && f.Sum(wire.MetricFakeInService, nil) >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request in service on the node after 20 s (last scrape error: %v)", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGatewaySecondSignalStopsTheDrain: while the gateway drains (here a
// drain_delay that would last nearly an hour, /readyz answering 503), a
// second SIGTERM ends the process at once, as an operator expects.
func TestGatewaySecondSignalStopsTheDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts a child process")
	}
	bin := buildLevee(t)
	conf := "listen: 127.0.0.1:0\nadmin: 127.0.0.1:0\ndrain_timeout: 1h\ndrain_delay: 59m\nupstream:\n  nodes: [\"http://127.0.0.1:9\"]\n"
	cfg := writeGatewayConfig(t, conf)
	gw, ready := startServer(t, bin, "gateway", "--config", cfg)
	base := "http://" + ready["listen"].(string)
	if err := gw.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second) // waiting for a state: only a failure takes this long
	for {
		resp, err := http.Get(base + wire.PathReadyz)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz never answered 503 after SIGTERM (last: %v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := gw.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- gw.Wait() }()
	select {
	case <-waitErr: // killed by the signal: exit status says so
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway still drains 20 s after a second SIGTERM")
	}
}

// TestFakemodelSecondSignalStopsTheDrain: a fake model draining a request
// that holds its slot for minutes (--drain 1h) ends at once on a second
// SIGTERM, as the gateway does; before, it ignored every signal after the
// first and drained to the end (Ctrl-C twice in a terminal did nothing).
func TestFakemodelSecondSignalStopsTheDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts a child process")
	}
	bin := buildLevee(t)
	stderr, stderrW := io.Pipe()
	cmd, r := startChild(t, bin, stderrW, "fakemodel", "--nodes", "1", "--listen", "127.0.0.1:0", "--drain", "1h",
		"--knobs", `{"latency":{"dist":"fixed","fixed_ms":600000}}`)
	t.Cleanup(func() { _ = stderr.Close() }) // after the kill: the copy of stderr ends
	draining := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "fakemodel draining") {
				close(draining)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.Listen+wire.PathChat,
			strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitInService(t, "http://"+r.Listen+wire.PathMetrics)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The second signal only once the first was taken (the log line says
	// so): sent before, it would be folded into the first.
	select {
	case <-draining:
	case <-time.After(20 * time.Second): // hang guard
		t.Fatal("no \"fakemodel draining\" line on stderr 20 s after SIGTERM")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case <-waitErr:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("exit %v, want killed by the second SIGTERM", cmd.ProcessState)
		}
	case <-time.After(20 * time.Second): // hang guard
		t.Fatal("the fake model still drains 20 s after a second SIGTERM")
	}
}
