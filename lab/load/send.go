package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// maxSmallBody bounds how much of a JSON answer is kept to look for the
// fallback marker; the rest is read and discarded.
const maxSmallBody = 1 << 20

// sent is what became of one attempt.
type sent struct {
	outcome wire.Outcome // never generator_dropped
	status  int          // HTTP status, 0 when no answer came
	// reached: the request got to the server — an answer came (any
	// status), or the whole request was written on a connection to it
	// (a timeout waiting for the answer). A dial failure or a refused
	// connection never reached it.
	reached bool
	// resent counts the times net/http wrote this attempt again on
	// another connection, unasked, after the server closed a kept-alive
	// one without answering (it does so for a GET): the server got
	// 1+resent requests.
	resent int
	// cause says why no HTTP answer came (status 0): "client timeout",
	// "connection refused", "connection reset", "connection closed
	// (EOF)", or the transport's error; "" when an answer came.
	cause string
}

// send performs attempt number attempt (1 for the first). The attempt is
// bounded by the client timeout from now, body included, and is not tied
// to the Run context.
func (g *Generator) send(s spec, attempt int) sent {
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.ClientTimeout)
	defer cancel()
	// net/http resends a GET on another connection when a kept-alive one
	// the server closed without answering fails it: each resend takes a
	// connection (GotConn), and the requests written before the last one
	// are the server's, unseen by the caller of Do. The transport may
	// report from its own goroutines.
	var (
		traceMu        sync.Mutex
		wrote          bool // the request was written whole (on some connection)
		writes, resent int
	)
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) {
			traceMu.Lock()
			resent = writes
			traceMu.Unlock()
		},
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				traceMu.Lock()
				wrote = true
				writes++
				traceMu.Unlock()
			}
		},
	})
	traced := func(a sent) sent {
		traceMu.Lock()
		defer traceMu.Unlock()
		a.reached = a.reached || wrote
		a.resent = resent
		return a
	}
	req, err := newRequest(tctx, s, g.cfg.ClientTimeout)
	if err != nil {
		return sent{outcome: wire.OutcomeError, cause: err.Error()}
	}
	req.Header.Set(wire.HeaderAttempt, strconv.Itoa(attempt))
	resp, err := g.client.Do(req)
	if err != nil {
		o := errorOutcome(ctx, err)
		return traced(sent{outcome: o, cause: errorCause(o, err)})
	}
	defer resp.Body.Close()
	return traced(sent{outcome: g.readAnswer(ctx, s, resp), status: resp.StatusCode, reached: true})
}

// readAnswer reads resp to its end (slowly for a slow client) and
// classifies it.
func (g *Generator) readAnswer(ctx context.Context, s spec, resp *http.Response) wire.Outcome {
	var body io.Reader = resp.Body
	if s.slowBps > 0 {
		body = &slowReader{ctx: ctx, r: body, bps: s.slowBps, start: time.Now()}
	}
	var (
		r   bodyResult
		err error
	)
	if s.route.streamed() && resp.StatusCode == http.StatusOK {
		r, err = readSSE(body)
	} else {
		r, err = readBody(body, s.route != RouteExport)
	}
	if err != nil {
		return errorOutcome(ctx, err)
	}
	h := resp.Header
	if final := resp.Trailer.Get(wire.HeaderOutcomeFinal); final != "" {
		h = h.Clone()
		h.Set(wire.HeaderOutcome, final)
	}
	o := classify(resp.StatusCode, h, r.fallback)
	// A stream that ends without [DONE] is a malformed answer.
	if s.route.streamed() && (o == wire.OutcomeOK || o == wire.OutcomeFallback) && !r.done {
		return wire.OutcomeError
	}
	return o
}

// newRequest builds the HTTP request for s.
func newRequest(ctx context.Context, s spec, timeout time.Duration) (*http.Request, error) {
	var method, path string
	var body []byte
	switch s.route {
	case RoutePredict:
		method, path = http.MethodPost, wire.PathPredict
		body = fmt.Appendf(nil, `{"features":{"amount":%.2f,"account_age_days":%d,"txn_count_24h":%d,"prompt_tokens":%d}}`,
			s.amount, s.ageDays, s.txn24h, s.tokens)
	case RouteChat, RouteChatStream:
		method, path = http.MethodPost, wire.PathChat
		stream := ""
		if s.route == RouteChatStream {
			stream = `,"stream":true`
		}
		body = fmt.Appendf(nil, `{"model":"fake","messages":[{"role":"user","content":%q}],"max_tokens":%d%s}`,
			prompt(s.tokens), s.maxTokens, stream)
	case RouteAgent:
		method, path = http.MethodPost, wire.PathAgent
		body = fmt.Appendf(nil, `{"prompt":%q,"max_tokens":%d`, prompt(max(s.tokens, 1)), s.maxTokens)
		if s.steps > 0 {
			body = fmt.Appendf(body, `,"steps":%d`, s.steps)
		}
		body = append(body, '}')
	case RouteCompletions, RouteCompletionsStream:
		method, path = http.MethodPost, wire.PathCompletions
		stream := ""
		if s.route == RouteCompletionsStream {
			stream = `,"stream":true`
		}
		body = fmt.Appendf(nil, `{"model":"fake","prompt":%q,"max_tokens":%d%s}`, prompt(max(s.tokens, 1)), s.maxTokens, stream)
	case RouteEmbeddings:
		method, path = http.MethodPost, wire.PathEmbeddings
		body = fmt.Appendf(nil, `{"model":"fake","input":%q}`, prompt(max(s.tokens, 1)))
	case RouteExport:
		method, path = http.MethodGet, wire.PathExport+"?"+wire.QueryExportRows+"="+strconv.Itoa(max(s.tokens, 1))
	case RouteStandard:
		method, path = http.MethodGet, wire.PathStandard+"ping"
	default:
		return nil, fmt.Errorf("load: unknown route %q", s.route)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.target+path, rd)
	if err != nil {
		return nil, fmt.Errorf("load: build %s request: %w", s.route, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.route.streamed() {
		req.Header.Set("Accept", "text/event-stream")
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	req.Header.Set(wire.HeaderDeadlineMs, strconv.FormatInt(deadlineMs(timeout), 10))
	return req, nil
}

// deadlineMs is timeout in whole milliseconds rounded up, at least 1: the
// gateway refuses a deadline of 0, and a truncated one would ask it to give
// up before the client does.
func deadlineMs(timeout time.Duration) int64 {
	ms := timeout / time.Millisecond
	if timeout%time.Millisecond > 0 {
		ms++
	}
	return max(1, int64(ms))
}

// classify maps a complete answer to its outcome: by X-Levee-Outcome when
// present (an unknown value is an error), else by status. bodyFallback
// reports a "fallback":true marker in the body.
func classify(status int, h http.Header, bodyFallback bool) wire.Outcome {
	if v := h.Get(wire.HeaderOutcome); v != "" {
		if o, ok := serverOutcome(v); ok {
			return o
		}
		return wire.OutcomeError
	}
	switch {
	case status >= 200 && status < 300:
		if strings.EqualFold(h.Get(wire.HeaderFallback), "true") || bodyFallback {
			return wire.OutcomeFallback
		}
		return wire.OutcomeOK
	case status == http.StatusTooManyRequests:
		return wire.OutcomeShedRateLimit
	case status == http.StatusGatewayTimeout:
		return wire.OutcomeTimeout
	default:
		return wire.OutcomeError
	}
}

// errorOutcome maps a transport or body error: the client deadline passing
// is a timeout, anything else (refused, reset, malformed) an error.
func errorOutcome(ctx context.Context, err error) wire.Outcome {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return wire.OutcomeTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return wire.OutcomeTimeout
	}
	return wire.OutcomeError
}

// errorCause names why an attempt got no HTTP answer (outcome o, from
// errorOutcome): a few common causes by name, else the innermost
// transport error's text.
func errorCause(o wire.Outcome, err error) string {
	var ue *url.Error
	switch {
	case o == wire.OutcomeTimeout:
		return "client timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed (EOF)"
	case errors.As(err, &ue):
		return ue.Err.Error()
	}
	return err.Error()
}

type bodyResult struct {
	fallback bool // the body carries "fallback":true
	done     bool // an SSE stream ended with data: [DONE]
}

var fallbackMarkers = [][]byte{[]byte(`"` + wire.FieldFallback + `":true`), []byte(`"` + wire.FieldFallback + `": true`)}

func hasFallback(b []byte) bool {
	for _, m := range fallbackMarkers {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}

// readBody reads r to the end. When small, it keeps up to maxSmallBody
// bytes to look for the fallback marker.
func readBody(r io.Reader, small bool) (bodyResult, error) {
	if !small {
		_, err := io.Copy(io.Discard, r)
		return bodyResult{}, err
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSmallBody))
	if err != nil {
		return bodyResult{}, err
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return bodyResult{}, err
	}
	return bodyResult{fallback: hasFallback(b)}, nil
}

// readSSE reads a server-sent event stream to its end, noting the
// data: [DONE] line and any fallback marker. A line longer than the
// buffer is judged by its first 4096 bytes; the rest of it is skipped,
// never read as a line of its own.
func readSSE(r io.Reader) (bodyResult, error) {
	var res bodyResult
	br := bufio.NewReaderSize(r, 4096)
	tail := false // the next slice continues a line longer than the buffer
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && !tail {
			t := bytes.TrimRight(line, "\r\n")
			if d, ok := bytes.CutPrefix(t, []byte("data:")); ok {
				d = bytes.TrimSpace(d)
				if string(d) == "[DONE]" {
					res.done = true
				} else if !res.fallback && hasFallback(d) {
					res.fallback = true
				}
			}
		}
		tail = errors.Is(err, bufio.ErrBufferFull)
		switch {
		case err == nil:
		case tail:
			// A line longer than the buffer: its start was inspected, skip the rest.
		case errors.Is(err, io.EOF):
			return res, nil
		default:
			return res, err
		}
	}
}

// slowReader reads at most bps bytes per second on average, like a client
// on a slow link. The underlying connection's buffers fill and the server
// feels backpressure.
type slowReader struct {
	ctx   context.Context
	r     io.Reader
	bps   float64
	start time.Time
	n     int64 // bytes read so far
}

func (s *slowReader) Read(p []byte) (int, error) {
	// Chunks of about 1/20 s of data keep the pace smooth.
	chunk := int(s.bps / 20)
	if chunk < 64 {
		chunk = 64
	}
	if len(p) > chunk {
		p = p[:chunk]
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	due := s.start.Add(time.Duration(float64(s.n) / s.bps * float64(time.Second)))
	if d := time.Until(due); d > 0 && n > 0 {
		t := time.NewTimer(d)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return n, s.ctx.Err()
		case <-t.C:
		}
	}
	return n, err
}
