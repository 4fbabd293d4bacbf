package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const childEnv = "LEVEE_UPSTREAM_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(childServe())
	}
	os.Exit(m.Run())
}

// childServe is a tiny model node in its own process: it prints its address
// on stdout, answers /healthz, and on /work prints "got" and then never
// answers (until a 30 s bound), so the parent can SIGKILL it mid-request.
// It exits when stdin closes (the parent is gone) or after 60 s.
func childServe() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Println("got")
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	go func() { time.Sleep(60 * time.Second); os.Exit(0) }()
	fmt.Println(ln.Addr().String())
	http.Serve(ln, mux)
	return 0
}

// startChild starts childServe in a new process and returns its base URL,
// the command and a channel receiving its later stdout lines.
func startChild(t *testing.T) (string, *exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child printed no address: %v", sc.Err())
	}
	addr := strings.TrimSpace(sc.Text())
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(lines)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		<-readerDone
	})
	return "http://" + addr, cmd, lines
}

// A node process SIGKILLed mid-request: the call fails at the connection
// level (EOF before response headers) and, with retries on, succeeds on the
// other node; afterwards the dead node refuses connections and the health
// check marks it down.
func TestPoolNodeProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, retry := range []bool{true, false} {
		t.Run(fmt.Sprintf("retry=%v", retry), func(t *testing.T) {
			checkGoroutines(t)
			childURL, cmd, lines := startChild(t)
			good := newTestNode(t)
			p := newPool(t, Config{
				Nodes:          []string{childURL, good.srv.URL},
				HealthInterval: 20 * time.Millisecond,
				RetryBudget:    RetryBudgetConfig{MinPerSecond: 1},
			}, first)
			p.SetRetryEnabled(retry)

			type result struct {
				body string
				err  error
			}
			res := make(chan result, 1)
			go func() {
				resp, err := p.Do(context.Background(), http.MethodPost, "/work", []byte("prompt"), nil)
				if err != nil {
					res <- result{err: err}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				res <- result{body: string(b)}
			}()
			select {
			case l := <-lines:
				if l != "got" {
					t.Fatalf("child said %q", l)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("child never got the request")
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var r result
			select {
			case r = <-res:
			case <-time.After(10 * time.Second):
				t.Fatal("Do did not return after the node was killed")
			}
			st := p.Stats()
			if st[0].Failures != 1 || st[0].Inflight != 0 {
				t.Fatalf("killed node stats %+v", st[0])
			}
			if retry {
				if r.err != nil || r.body != "ok" {
					t.Fatalf("with retry: body %q err %v, want ok from the other node", r.body, r.err)
				}
				if c := p.Counters(); c.RetriesSent != 1 || good.hits.Load() != 1 {
					t.Fatalf("counters %+v, good hits %d", c, good.hits.Load())
				}
			} else {
				t.Logf("killed mid-request, no retry: %v", r.err)
				if !errors.Is(r.err, ErrConn) {
					t.Fatalf("without retry: err %v, want ErrConn", r.err)
				}
			}
			cmd.Wait() // reaped: its port now refuses connections

			// Next call: refused on the dead node, retried (or not) elsewhere.
			resp, err := p.Do(context.Background(), http.MethodPost, "/work", []byte("x"), nil)
			if err == nil {
				resp.Body.Close()
			}
			if retry != (err == nil) {
				t.Fatalf("call after kill: err %v", err)
			}
			if !retry && !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("call after kill: err %v, want connection refused", err)
			}

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { p.Run(ctx); close(done) }()
			eventually(t, "killed node marked down", func() bool { return !p.Stats()[0].Up })
			cancel()
			<-done
			doOK(t, p, "/work") // goes to the live node without any failure
			if p.Stats()[0].Requests != 2 {
				t.Fatalf("down node still picked: %+v", p.Stats()[0])
			}
		})
	}
}
