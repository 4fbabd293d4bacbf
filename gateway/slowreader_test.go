package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// bigAnswerModel is a model node whose predict answer is a JSON document
// of size bytes (under maxUpstreamBody), more than the loopback socket
// buffers of a client that reads nothing can take.
func bigAnswerModel(t *testing.T, size int) *httptest.Server {
	pad := strings.Repeat("x", size-len(`{"decision":"APPROVE","score":0.87,"pad":""}`))
	answer := `{"decision":"APPROVE","score":0.87,"pad":"` + pad + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestUnreadAnswerIsCut: a client that sends a request and never reads
// its (non-streamed) answer must not hold the answer's bulkhead slot and
// goroutine for ever: the write is bounded by stream.write_timeout, then
// the connection is cut and the request counted (a timeout).
func TestUnreadAnswerIsCut(t *testing.T) {
	const size = maxUpstreamBody - 1024
	up := bigAnswerModel(t, size)
	cfg := testConfig(strings.TrimPrefix(up.URL, "http://"))
	cfg.Stream.WriteTimeout = 200 * time.Millisecond
	s := startServer(t, cfg)
	conn := dialSlowReader(t, s.Addr())
	_, _ = io.WriteString(conn, "POST /v1/predict HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(predictBody))+"\r\n\r\n"+predictBody)
	// Read nothing: the gateway's write blocks, then hits its deadline.
	eventually(t, 10*time.Second, func() bool {
		return counterSum(scrape(t, s), "levee_requests_total", map[string]string{"route": "predict"}) == 1
	}, "the unread predict answer to be counted")
	fams := scrape(t, s)
	if got := counterSum(fams, "levee_requests_total", map[string]string{"route": "predict", "outcome": "timeout"}); got != 1 {
		t.Errorf("unread answer counted as %v timeouts, want 1", got)
	}
	// The place is given back as the handler returns, just after counting.
	eventually(t, 5*time.Second, func() bool {
		return counterSum(scrape(t, s), "levee_inflight", map[string]string{"class": "ai"}) == 0
	}, "levee_inflight{class=ai} to return to 0 after the request ended")
	// What was sent is a part of the answer: the connection was cut.
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _ := io.Copy(io.Discard, conn)
	if n >= size {
		t.Errorf("client received %d bytes of a %d-byte answer after the cut", n, size)
	}
}

// dialSlowReader connects to addr with a 4 KB receive buffer, for a client
// that reads slowly or not at all; the test closes it at its end.
func dialSlowReader(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	return conn
}

// TestSlowReaderGivesBackItsPlace: once the model's answer is read whole
// into the gateway, the model needs nothing more of the request: its
// bulkhead place and budget tokens go back before the answer is written,
// so a client reading a large answer slowly holds no model capacity. Here
// the ai class has one place and no queue; the first client reads nothing
// yet, and a second request gets the place (200) while the first answer
// still waits to be read. The first is counted once, when its write
// ends (here its client leaves: not ok). Before the fix the place stayed held for the whole
// write and the second request was shed (queue_full).
func TestSlowReaderGivesBackItsPlace(t *testing.T) {
	const size = maxUpstreamBody - 1024
	up := bigAnswerModel(t, size)
	var served atomic.Int64
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.Config.Handler.ServeHTTP(w, r)
		if r.URL.Path == wire.PathPredict {
			served.Add(1)
		}
	}))
	t.Cleanup(counted.Close)
	cfg := testConfig(strings.TrimPrefix(counted.URL, "http://"))
	cfg.Classes.AI = staticClass(1, 1, 1, 0, time.Second)
	cfg.Stream.WriteTimeout = time.Minute // the first client's write ends when it leaves
	s := startServer(t, cfg)

	conn := dialSlowReader(t, s.Addr())
	_, _ = io.WriteString(conn, "POST /v1/predict HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(predictBody))+"\r\n\r\n"+predictBody)
	eventually(t, 10*time.Second, func() bool { return served.Load() == 1 }, "the model to answer the first request")
	eventually(t, 10*time.Second, func() bool {
		f := scrape(t, s)
		return counterSum(f, "levee_inflight", map[string]string{"class": "ai"}) == 0 &&
			counterSum(f, "levee_tokens_inflight", nil) == 0
	}, "the first request's place and budget tokens to be given back while its client has read nothing")
	if got := counterSum(scrape(t, s), "levee_requests_total", map[string]string{"route": "predict"}); got != 0 {
		t.Fatalf("the first request is counted (%v) before its answer is written", got)
	}

	a := call(t, "POST", "http://"+s.Addr()+wire.PathPredict, "k1", predictBody)
	if a.status != http.StatusOK || len(a.body) != size {
		t.Fatalf("second request while the first client is still reading: status %d outcome %q, %d bytes; want 200 with %d", a.status, a.outcome, len(a.body), size)
	}
	if got := counterSum(scrape(t, s), "levee_requests_total", map[string]string{"route": "predict"}); got != 1 {
		t.Errorf("levee_requests_total{route=predict} = %v after the second answer, want 1 (the first is still being written)", got)
	}

	// The first client leaves before reading it all: its write fails, and
	// the request is counted then, once.
	conn.Close()
	eventually(t, 10*time.Second, func() bool {
		return counterSum(scrape(t, s), "levee_requests_total", map[string]string{"route": "predict"}) == 2
	}, "the first request to be counted when its write ended")
	f := scrape(t, s)
	// A client gone mid-answer ends its request's context: the gateway
	// counts that as a timeout (as TestUnreadAnswerIsCut's), never as ok.
	if got := counterSum(f, "levee_requests_total", map[string]string{"route": "predict", "outcome": "ok"}); got != 1 {
		t.Errorf("levee_requests_total{route=predict,outcome=ok} = %v, want 1 (the second request)", got)
	}
	if got := counterSum(f, "levee_inflight", map[string]string{"class": "ai"}); got != 0 {
		t.Errorf("levee_inflight{class=ai} = %v at the end, want 0", got)
	}
	if got := counterSum(f, "levee_admitted_total", map[string]string{"class": "ai"}); got != 2 {
		t.Errorf("levee_admitted_total{class=ai} = %v, want 2", got)
	}
}
