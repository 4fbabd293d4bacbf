package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

// exchange is one traffic request on its way through the chain. Its
// outcome is counted exactly once, by finish.
type exchange struct {
	g        *Gateway
	w        http.ResponseWriter
	r        *http.Request
	route    routeID
	id       Identity
	ctx      context.Context // ends at the request's deadline
	deadline time.Time
	start    time.Time

	counted bool // finish ran
	started bool // response headers were sent
	abort   bool // cut the connection when the handler returns
}

// finish counts the request's outcome once; later calls do nothing. An
// answer whose outcome does not hang on its write (an error, a shed, a
// JSON reply, a fallback) is counted before it is written, so a client
// that has read it finds it counted; one relayed with write deadlines
// (writeAnswer, a stream) is counted once its last write ended.
func (x *exchange) finish(o wire.Outcome) {
	if x.counted {
		return
	}
	x.counted = true
	p := x.id.Priority
	x.g.m.requests[x.route][p][o].Inc()
	if reason, ok := o.ShedReason(); ok {
		x.g.m.shed[reason][p].Inc()
	}
}

// fail answers with a JSON error (code wire.ErrorCode(status, o)) and
// counts o.
func (x *exchange) fail(status int, o wire.Outcome, field, msg string) {
	x.failCode(status, o, wire.ErrorCode(status, o), field, msg)
}

// failCode is fail with the error's code given. The outcome is counted
// before the answer is written (as shed does): a client that has read it
// finds it counted.
func (x *exchange) failCode(status int, o wire.Outcome, code, field, msg string) {
	x.finish(o)
	if !x.started {
		x.started = true
		writeErrorCode(x.w, status, o, true, code, field, msg)
	}
}

// shed counts a refused request, then answers it: a client that has read
// a shed knows levee_shed_total counted it (the lab's recordings check the
// counter against the sheds clients saw, across scrapes).
func (x *exchange) shed(s *shed) {
	x.finish(s.outcome)
	if !x.started {
		x.started = true
		writeShed(x.w, s.outcome, s.status, s.retryAfter, s.code, s.msg)
	}
}

// reply answers 200 with v as JSON and counts o (ok or fallback), first.
func (x *exchange) reply(o wire.Outcome, v any) {
	x.finish(o)
	if !x.started {
		x.started = true
		writeJSON(x.w, o, v)
	}
}

// timedOut reports whether the request's context ended: its deadline
// passed, or the client left (whose own deadline is the usual reason).
// Either is answered as a timeout.
func (x *exchange) timedOut() bool { return x.ctx.Err() != nil }

// readBody reads the request body within the body limit: 413 above it,
// 400 when the body cannot be read or is shorter than its Content-Length,
// 504 when the deadline passes first. It returns false after answering.
// A leading UTF-8 byte order mark is taken off (openai.TrimBOM): what is
// read is what goes upstream.
func (x *exchange) readBody() ([]byte, bool) {
	limit := x.g.cfg.BodyLimitBytes
	if x.r.ContentLength > limit {
		x.fail(http.StatusRequestEntityTooLarge, wire.OutcomeError, "", fmt.Sprintf("body of %d bytes exceeds the limit of %d", x.r.ContentLength, limit))
		return nil, false
	}
	_ = http.NewResponseController(x.w).SetReadDeadline(x.deadline)
	body, err := readAll(http.MaxBytesReader(x.w, x.r.Body, limit), x.r.ContentLength, limit)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			x.fail(http.StatusRequestEntityTooLarge, wire.OutcomeError, "", fmt.Sprintf("body exceeds the limit of %d bytes", limit))
			return nil, false
		}
		// Before the timeout check: a client that half-closes after a
		// short body also ends the request's context, but its deadline did
		// not pass; its body was short.
		if errors.Is(err, io.ErrUnexpectedEOF) {
			x.fail(http.StatusBadRequest, wire.OutcomeError, "", fmt.Sprintf("body shorter than its Content-Length (%d bytes)", x.r.ContentLength))
			return nil, false
		}
		if x.timedOut() || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			x.fail(http.StatusGatewayTimeout, wire.OutcomeTimeout, "", "deadline passed while reading the body")
			return nil, false
		}
		x.fail(http.StatusBadRequest, wire.OutcomeError, "", "reading body: "+err.Error())
		return nil, false
	}
	return openai.TrimBOM(body), true
}

// badRequest answers a *openai.RequestError as 400 naming its field, in
// the message too (as the fake model does), since clients often show
// only the message.
func (x *exchange) badRequest(err error) {
	var re *openai.RequestError
	if errors.As(err, &re) {
		x.fail(http.StatusBadRequest, wire.OutcomeError, re.Field, re.Error())
		return
	}
	x.fail(http.StatusBadRequest, wire.OutcomeError, "", err.Error())
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// parseDeadline returns the client's remaining time from
// X-Levee-Deadline-Ms (or X-Request-Timeout-Ms), 0 when absent.
func parseDeadline(r *http.Request) (time.Duration, string, error) {
	for _, h := range []string{wire.HeaderDeadlineMs, wire.HeaderRequestTimeoutMs} {
		v := r.Header.Get(h)
		if v == "" {
			continue
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms <= 0 {
			return 0, h, fmt.Errorf("must be a positive integer of milliseconds, got %q", v)
		}
		return time.Duration(min(ms, maxDeadlineMs)) * time.Millisecond, h, nil
	}
	return 0, "", nil
}

// maxDeadlineMs caps a client deadline (a day) before it meets the route's.
const maxDeadlineMs = 24 * 3600 * 1000

// routeTimeout returns the configured timeout of route r.
func (g *Gateway) routeTimeout(r routeID) time.Duration {
	rt := g.cfg.Routes
	switch r {
	case routeChat:
		return rt.Chat.Timeout
	case routePredict:
		return rt.Predict.Timeout
	case routeAgent:
		return rt.Agent.Timeout
	case routeExport:
		return rt.Export.Timeout
	case routeCompletions:
		return rt.Completions.Timeout
	case routeEmbeddings:
		return rt.Embeddings.Timeout
	}
	return rt.Standard.Timeout
}

// serveRoute wraps a route handler: method check, classification,
// deadline, panic recovery, and the exactly-once outcome count.
func (g *Gateway) serveRoute(r routeID, method string, serve func(*exchange)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		x := &exchange{g: g, w: w, r: req, route: r, start: time.Now()}
		x.ctx = req.Context()
		defer func() {
			v := recover()
			if v == nil {
				if !x.counted { // a handler returned without an outcome: a bug, but count it
					g.log.Error("gateway: request ended without an outcome", "route", r.String())
					x.fail(http.StatusInternalServerError, wire.OutcomeError, "", "internal error")
				}
				return
			}
			if v != http.ErrAbortHandler {
				g.log.Error("gateway: panic serving request", "route", r.String(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			}
			started := x.started
			x.fail(http.StatusInternalServerError, wire.OutcomeError, "", "internal error")
			if started || v == http.ErrAbortHandler {
				panic(http.ErrAbortHandler) // cut the connection: the answer is broken
			}
		}()
		id, ok := g.keys.classify(req)
		x.id = id
		if !ok {
			x.fail(http.StatusUnauthorized, wire.OutcomeError, "Authorization", "missing or unknown API key")
			return
		}
		if method != "" && req.Method != method {
			w.Header().Set("Allow", method)
			x.fail(http.StatusMethodNotAllowed, wire.OutcomeError, "", "method "+req.Method+" not allowed; use "+method)
			return
		}
		timeout := g.routeTimeout(r)
		d, hdr, err := parseDeadline(req)
		if err != nil {
			x.fail(http.StatusBadRequest, wire.OutcomeError, hdr, err.Error())
			return
		}
		if d > 0 && d < timeout {
			timeout = d
		}
		x.deadline = x.start.Add(timeout)
		ctx, cancel := context.WithDeadline(req.Context(), x.deadline)
		defer cancel()
		x.ctx = ctx
		serve(x)
		if x.abort {
			panic(http.ErrAbortHandler)
		}
	}
}

func (g *Gateway) newTrafficHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(wire.PathChat, g.serveRoute(routeChat, http.MethodPost, g.serveChat))
	mux.Handle(wire.PathPredict, g.serveRoute(routePredict, http.MethodPost, g.servePredict))
	mux.Handle(wire.PathCompletions, g.serveRoute(routeCompletions, http.MethodPost, g.serveCompletions))
	mux.Handle(wire.PathEmbeddings, g.serveRoute(routeEmbeddings, http.MethodPost, g.serveEmbeddings))
	mux.Handle(wire.PathAgent, g.serveRoute(routeAgent, http.MethodPost, g.serveAgent))
	mux.Handle(wire.PathExport, g.serveRoute(routeExport, http.MethodGet, g.serveExport))
	mux.Handle(wire.PathStandard, g.serveRoute(routeStandard, http.MethodGet, g.serveStandard))
	mux.Handle(wire.PathModels, g.serveRoute(routeOther, http.MethodGet, g.serveModels))
	mux.Handle(wire.PathV1, g.serveRoute(routeOther, "", func(x *exchange) {
		x.fail(http.StatusNotFound, wire.OutcomeError, "", "no route "+x.r.URL.Path)
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Outside /v1/ nothing is a traffic route: not counted, but the
		// contract's JSON error all the same.
		writeError(w, http.StatusNotFound, 0, false, "", "no route "+r.URL.Path)
	})
	mux.Handle(wire.PathMetrics, promhttp.HandlerFor(g.m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc(wire.PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	mux.HandleFunc(wire.PathReadyz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if g.draining.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"status":"draining"}`+"\n")
			return
		}
		_, _ = io.WriteString(w, `{"status":"ready"}`+"\n")
	})
	return mux
}
