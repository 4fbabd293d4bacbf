package httpbody

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// trickle opens a connection to addr, sends a request whose body of n
// bytes follows one byte every gap, and reports whether the server closed
// the connection before the whole body was sent. The response to the
// request is read first.
func trickle(t *testing.T, addr, method, path string, n int, gap time.Duration) (cut bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", method, path, n)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, nil); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		_, _ = io.Copy(io.Discard, br) // returns when the server closes
	}()
	for range n {
		select {
		case <-closed:
			return true
		case <-time.After(gap):
		}
		if _, err := c.Write([]byte{'x'}); err != nil {
			return true
		}
	}
	select { // the whole body went: does the server keep the connection?
	case <-closed:
		return true
	case <-time.After(5 * gap):
		return false
	}
}

// TestUnreadBodyIsCut: a handler that never reads its body answers at
// once; the client then trickles the body. Without Deadline net/http
// drains it for as long as the client sends; with it the connection is
// closed once the deadline passes, long before the body is complete.
func TestUnreadBodyIsCut(t *testing.T) {
	healthz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	const n, gap = 60, 50 * time.Millisecond // 3 s of body
	for _, tt := range []struct {
		name    string
		h       http.Handler
		wantCut bool
	}{
		{"bare net/http holds the connection", healthz, false},
		{"Deadline cuts it", Deadline(healthz, 200*time.Millisecond), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tt.h)
			srv.Config.ReadHeaderTimeout = 200 * time.Millisecond
			srv.Start()
			defer srv.Close()
			if got := trickle(t, srv.Listener.Addr().String(), http.MethodPost, "/healthz", n, gap); got != tt.wantCut {
				t.Fatalf("connection cut before the body ended: %v, want %v", got, tt.wantCut)
			}
		})
	}
}

// TestReadBodyAndLongAnswer: a handler that reads its body and clears the
// deadline answers long after the deadline without its context ending,
// and a request without a body is never given a deadline.
func TestReadBodyAndLongAnswer(t *testing.T) {
	h := Deadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		Done(w)
		select {
		case <-r.Context().Done():
			http.Error(w, "context ended", http.StatusInternalServerError)
		case <-time.After(400 * time.Millisecond): // > the deadline below
			_, _ = io.WriteString(w, "ok")
		}
	}), 100*time.Millisecond)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, body := range []string{"payload", ""} {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		resp, err := http.Post(srv.URL, "text/plain", rd)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "ok" {
			t.Fatalf("body %q: %d %q", body, resp.StatusCode, b)
		}
	}
}
