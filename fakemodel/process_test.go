package fakemodel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// childEnv makes the test binary run one fake model node instead of the
// tests: its value is the knobs as JSON. The child prints the ready line on
// stdout and serves until SIGTERM, like `levee fakemodel --nodes 1`.
const childEnv = "LEVEE_FAKEMODEL_TEST_CHILD"

func TestMain(m *testing.M) {
	if knobs, ok := os.LookupEnv(childEnv); ok {
		os.Exit(runChild(knobs))
	}
	os.Exit(m.Run())
}

func runChild(knobsJSON string) int {
	k, err := DefaultKnobs().Patch([]byte(knobsJSON))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child knobs:", err)
		return 2
	}
	lns, err := Listen("127.0.0.1", 0, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := NewServer(lns, WithKnobs(k), WithAdminToken(testToken))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fmt.Printf("%s\n", s.ReadyLine())
	if err := s.Run(ctx, 5*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild runs a one-node child process and returns it with its URL.
func startChild(t *testing.T, knobs string) (*exec.Cmd, string, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+knobs)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	lines := make(chan string, 1)
	go func() {
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(10 * time.Second):
		t.Fatal("child printed no ready line in 10 s")
	}
	ready, ok := wire.ParseReady([]byte(line))
	if !ok || ready.Kind != wire.KindFakeModel || ready.PID != cmd.Process.Pid || len(ready.Nodes) != 1 {
		t.Fatalf("ready line %q: %+v", line, ready)
	}
	return cmd, "http://" + ready.Listen, sc
}

// waitInService polls the child's metrics until want requests are in service.
func waitInService(t *testing.T, url string, want float64) {
	t.Helper()
	waitFor(t, "the request to be in service", func() bool {
		return scrape(t, url)["levee_fakemodel_in_service"] == want
	})
}

// TestSIGKILLMidRequest is the acceptance test: killing a one-node process
// while it serves a request gives the client a connection error, and later
// connections are refused.
//
// The service lasts 10 minutes and the client waits at most 30 s: an error
// that does not come at the kill is the client's timeout, which fails.
func TestSIGKILLMidRequest(t *testing.T) {
	cmd, url, _ := startChild(t, `{"latency":{"dist":"fixed","fixed_ms":600000},"slots":2}`)
	type result struct {
		code int
		err  error
	}
	res := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		code, _, err := post(ctx, url+"/v1/chat/completions", chatBody)
		res <- result{code, err}
	}()
	waitInService(t, url, 1)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err == nil {
		t.Fatalf("client got HTTP %d from a killed node, want a connection error", r.code)
	}
	if testing.Verbose() {
		t.Logf("client error after SIGKILL: %v", r.err)
	}
	if errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("client error %v is a timeout, want a connection error at the kill", r.err)
	}
	_ = cmd.Wait()
	// A new connection, not one kept alive in testClient's pool (that one
	// would report the dead peer as EOF, not as a refusal).
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 2*time.Second)
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("new connection after the kill: %v, want connection refused", err)
	}
}

// TestSIGTERMDrains: SIGTERM lets the in-flight request finish with 200 and
// the process exits 0 having printed exactly one stdout line.
func TestSIGTERMDrains(t *testing.T) {
	cmd, url, sc := startChild(t, `{"latency":{"dist":"fixed","fixed_ms":400},"slots":2}`)
	codes := make(chan int, 1)
	go func() {
		code, _, err := post(context.Background(), url+"/v1/chat/completions", chatBody)
		if err != nil {
			code = -1
		}
		codes <- code
	}()
	waitInService(t, url, 1)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := <-codes; code != 200 {
		t.Fatalf("in-flight request during drain: %d, want 200", code)
	}
	if sc.Scan() {
		t.Fatalf("extra stdout line %q", sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child exit: %v, want 0", err)
	}
}
