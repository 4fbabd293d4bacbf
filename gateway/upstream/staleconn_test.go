package upstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// closingNode is a model node that serves one request per kept-alive
// connection and then closes it just as the next request is written to
// it, without reading it: the race a real server's short keep-alive
// timeout (uvicorn's 5 s) makes with a client that keeps connections
// idle longer. Its answers say "Connection: keep-alive", so the client
// keeps the connection; the close comes with the request unread, so
// the kernel answers it with a reset.
type closingNode struct {
	ln     net.Listener
	served atomic.Int64 // requests answered
	closed atomic.Int64 // connections closed on a second request
	wg     sync.WaitGroup
}

func newClosingNode(t *testing.T) *closingNode {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &closingNode{ln: ln}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.wg.Add(1)
			go func() { defer n.wg.Done(); n.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); n.wg.Wait() })
	return n
}

func (n *closingNode) url() string { return "http://" + n.ln.Addr().String() }

func (n *closingNode) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, req.Body)
	body := `{"ok":true}`
	if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: keep-alive\r\n\r\n%s", len(body), body); err != nil {
		return
	}
	n.served.Add(1)
	if req.Close {
		return // the client asked for a connection of one request
	}
	// The next request: wait for its first byte, take only that, and
	// close with the rest unread.
	var b [1]byte
	if k, _ := c.Read(b[:]); k == 1 {
		n.closed.Add(1)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as a close with unread data sends
		}
	}
}

// TestStaleKeepAliveConnRetried: a POST written onto a kept-alive
// connection the node closes unread fails before any byte of an answer;
// the pool sends it once more on a new connection, the call succeeds, and
// the node is not blamed: no connect failure, breaker closed, no retry
// drawn from the retry budget. Before, each such call was an attempt
// failure of the node (retried elsewhere at best) that fed its breaker and
// outlier detection.
func TestStaleKeepAliveConnRetried(t *testing.T) {
	node := newClosingNode(t)
	p, err := New(Config{Nodes: []string{node.url()}, RetryOn: []string{RetryOnStatus}, Breaker: BreakerConfig{MinRequests: 1, FailureRatio: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const calls = 4
	for i := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := p.Send(ctx, Call{Method: http.MethodPost, Path: "/v1/chat/completions", Body: []byte(`{"model":"m","messages":[]}`), Header: http.Header{"Content-Type": {"application/json"}}, Class: wire.CallChat})
		if err != nil {
			cancel()
			t.Fatalf("call %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK || string(b) != `{"ok":true}` {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, b)
		}
	}
	if node.closed.Load() == 0 {
		t.Fatal("the node never closed a kept-alive connection under a call: the test did not test")
	}
	st := p.Stats()[0]
	if f := p.nodes[0].fails[failConnect].Load(); f != 0 {
		t.Errorf("%d connect failures counted against the node, want 0 (stats %+v)", f, st)
	}
	if st.Breaker != wire.BreakerClosed {
		t.Errorf("breaker %s, want closed", st.Breaker)
	}
	if got := p.staleRetries.Load(); got == 0 || int64(got) > node.closed.Load() {
		t.Errorf("%d stale-connection retries for %d connections closed under a call", got, node.closed.Load())
	}
}

// TestIdleConnTimeoutSetsTransport: upstream.idle_conn_timeout is the
// transport's idle connection timeout; unset, Go's 90 s.
func TestIdleConnTimeoutSetsTransport(t *testing.T) {
	if got := NewTransport(Config{IdleConnTimeout: 4 * time.Second}).IdleConnTimeout; got != 4*time.Second {
		t.Errorf("IdleConnTimeout %v, want 4s", got)
	}
	if got := NewTransport(Config{}).IdleConnTimeout; got != DefaultIdleConnTimeout {
		t.Errorf("default IdleConnTimeout %v, want %v", got, DefaultIdleConnTimeout)
	}
}
