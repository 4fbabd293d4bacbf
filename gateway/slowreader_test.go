package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
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
