// Package httpbody bounds how long a server waits for request bodies.
//
// net/http gives a body no read deadline unless the server has a
// ReadTimeout, and after a handler that did not read its body returns it
// drains up to 256 KiB of it to keep the connection: a client sending one
// byte a second holds the connection (and whatever the handler held) for
// as long as it likes. A ReadTimeout is no cure: it also times out the
// background read net/http runs while a handler works, which cancels the
// request's context — every long stream would be cut. Deadline gives only
// requests that carry a body a read deadline, at once; a handler that
// reads its body moves it (SetReadDeadline) and clears it once read
// (Done), so long answers are not cut.
package httpbody

import (
	"net/http"
	"time"
)

// Deadline wraps h: a request with a body (a Content-Length above 0 or a
// chunked body) must deliver it within d of its headers, unless the
// handler moves the deadline. Requests without a body are untouched. A
// d ≤ 0 returns h.
func Deadline(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, r)
	})
}

// Done clears the read deadline once a handler has read its whole body,
// so net/http's background read (which watches for the client leaving)
// runs without one for the rest of the answer.
func Done(w http.ResponseWriter) { _ = http.NewResponseController(w).SetReadDeadline(time.Time{}) }
