package upstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// Behaviours of a scriptNode on /work.
const (
	answerOK          = iota // 200 "ok" at once
	answerHang               // never answers: waits for the client to leave
	answer500                // 500 at once
	answerHeadersOnly        // 200 headers at once, then no byte until the client leaves
	answerHold               // waits for release (or the client leaving), then 200 "ok"
	answerFirstByte          // 200 and "o" at once, then "k" after release
	answerHangThird          // every third request hangs, the others answer ok
	answer500Third           // every third request gets a 500, the others ok
)

// scriptNode is a loopback model node whose behaviour a test scripts. It
// counts requests and how many ended because the client went away: the
// disconnect a cancelled attempt must cause.
type scriptNode struct {
	srv       *httptest.Server
	mode      atomic.Int32
	hits      atomic.Int64
	gone      atomic.Int64  // requests whose client left before the answer ended
	lastDL    atomic.Value  // string: X-Levee-Deadline-Ms of the last request
	arrived   chan struct{} // one per request, after its behaviour started (the first nodeEvents; later ones are dropped)
	release   chan struct{} // closed by the test: held answers go on
	goneEvent chan struct{} // one per request whose client left (the first nodeEvents)
}

// nodeEvents: the arrivals and departures a scriptNode keeps for a test to
// wait on. Beyond them it drops the event rather than block: a handler
// blocked on a full channel never returns, and the server's Close in the
// cleanup waits for it forever (TestPoolConcurrentPartialFailures sends
// 320 calls, most of them to the good node, which nobody drains: a CI run
// hung there for 8 minutes).
const nodeEvents = 256

// note sends an event on ch unless it is full.
func note(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func newScriptNode(t *testing.T, mode int32) *scriptNode {
	t.Helper()
	n := &scriptNode{arrived: make(chan struct{}, nodeEvents), release: make(chan struct{}), goneEvent: make(chan struct{}, nodeEvents)}
	n.mode.Store(mode)
	left := func(r *http.Request) bool {
		select {
		case <-r.Context().Done():
			n.gone.Add(1)
			note(n.goneEvent)
			return true
		case <-n.release:
			return false
		case <-time.After(30 * time.Second): // a broken test must not hang forever
			return true
		}
	}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		hit := n.hits.Add(1)
		n.lastDL.Store(r.Header.Get(DeadlineHeader))
		_, _ = io.Copy(io.Discard, r.Body)
		mode := n.mode.Load()
		switch {
		case mode == answerHangThird && hit%3 == 0:
			mode = answerHang
		case mode == answer500Third && hit%3 == 0:
			mode = answer500
		case mode == answerHangThird || mode == answer500Third:
			mode = answerOK
		}
		switch mode {
		case answerOK:
			note(n.arrived)
			io.WriteString(w, "ok")
		case answerHang:
			note(n.arrived)
			left(r)
		case answer500:
			note(n.arrived)
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "injected")
		case answerHeadersOnly:
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			note(n.arrived)
			left(r)
		case answerHold:
			note(n.arrived)
			if !left(r) {
				io.WriteString(w, "ok")
			}
		case answerFirstByte:
			io.WriteString(w, "o")
			w.(http.Flusher).Flush()
			note(n.arrived)
			if !left(r) {
				io.WriteString(w, "k")
			}
		}
	}))
	t.Cleanup(func() {
		select {
		case <-n.release:
		default:
			close(n.release)
		}
		n.srv.Close()
	})
	return n
}

func (n *scriptNode) releaseAll() { close(n.release) }

// waitGone waits until k clients left the node (the attempts' requests
// were cancelled), failing the test after 5 s.
func (n *scriptNode) waitGone(t *testing.T, k int) {
	t.Helper()
	for range k {
		select {
		case <-n.goneEvent:
		case <-time.After(5 * time.Second):
			t.Fatalf("node saw %d disconnects, want %d", n.gone.Load(), k)
		}
	}
}

// waitArrived waits for one request to reach the node.
func (n *scriptNode) waitArrived(t *testing.T) {
	t.Helper()
	select {
	case <-n.arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("no request reached the node")
	}
}

// seedLatency records k answered attempts of latency d on node i for
// class, as if they had happened now: the quantile state a test starts
// from, so timing does not depend on the machine.
func seedLatency(p *Pool, i int, class string, d time.Duration, k int) {
	for range k {
		p.nodes[i].stats.record(p.clock.Now(), class, false, d)
	}
}
