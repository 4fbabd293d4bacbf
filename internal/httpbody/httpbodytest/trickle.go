// Package httpbodytest holds a slow client for tests of request-body
// deadlines, over real TCP.
package httpbodytest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Trickle opens a connection to addr and sends method path with header
// lines hdr (each ending in "\r\n") and a body of n bytes, one byte every
// gap. It reads the answer meanwhile and reports whether the server
// closed the connection before the whole body was sent, or within 5 gaps
// after it.
func Trickle(t testing.TB, addr, method, path, hdr string, n int, gap time.Duration) (cut bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n", method, path, hdr, n)
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
