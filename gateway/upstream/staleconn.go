package upstream

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"syscall"
)

// A node closes a keep-alive connection it found idle for its own
// keep-alive timeout (uvicorn, in front of vLLM: 5 s) whenever it likes;
// the gateway's transport learns it only when the FIN arrives. A call
// written onto such a connection in that window meets a closed socket: the
// node never read it, and the attempt fails before any byte of an answer
// with EOF or a reset. Go's transport sends such a request again by
// itself only when nothing of it was written or it is idempotent (GET,
// or an Idempotency-Key header); a model call is a POST. Envoy
// (retry_on: reset-before-request) and gRPC's transparent retry do the
// same for requests the server cannot have processed. The pool sends the
// call once more, on a new connection, and the failure is not the
// node's: its breaker and outlier statistics never see it.

// freshTransport returns a RoundTripper that always dials a new
// connection (and closes it after the answer) for rt: a clone of an
// *http.Transport without keep-alives, or rt itself.
func freshTransport(rt http.RoundTripper) http.RoundTripper {
	t, ok := rt.(*http.Transport)
	if !ok {
		return rt
	}
	f := t.Clone()
	f.DisableKeepAlives = true
	return f
}

// roundTrip sends req on the pool's transport. When it fails on a reused
// connection with a stale-connection error (staleConn), before any byte
// of an answer, and req's context is still live and its body can be sent
// again, req is sent once more on a new connection (p.fresh); that
// answer, or error, is the attempt's.
func (p *Pool) roundTrip(req *http.Request) (resp *http.Response, err error) {
	var reused atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused.Store(i.Reused) }}
	resp, err = p.rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err == nil || !reused.Load() || req.Context().Err() != nil || !staleConn(err) {
		return resp, err
	}
	again := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, err
		}
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, err
		}
		again.Body = body
	}
	p.staleRetries.Add(1)
	resp, err = p.fresh.RoundTrip(again)
	return resp, err
}

// errServerClosedIdle is net/http's text for a connection the server
// closed while it was idle (its error value is not exported).
const errServerClosedIdle = "http: server closed idle connection"

// staleConn reports whether err is how a request written onto a
// connection the node had already closed fails: the connection's end
// (EOF) or a reset before any answer byte, a broken pipe on writing, or
// net/http's "server closed idle connection". A truncated answer
// (io.ErrUnexpectedEOF: some of it came) is not: the node read the
// request.
func staleConn(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		strings.Contains(err.Error(), errServerClosedIdle)
}
