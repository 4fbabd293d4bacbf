package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/wire"
)

// clientWriter writes to a client with a write deadline on every write
// and flushes each write to the socket (or, with deferFlush, lets its
// caller flush several at once), so a slow client blocks the writer
// (backpressure) for at most timeout, and the gateway never holds more
// than the caller's bounded buffer plus net/http's own.
type clientWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	n       int64 // bytes written
	// deferFlush: Write leaves the flush to the caller (flush), which
	// makes it before it waits for more to write; pending says a write
	// has not been flushed yet.
	deferFlush, pending bool
}

func newClientWriter(w http.ResponseWriter, timeout time.Duration) *clientWriter {
	return &clientWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

func (c *clientWriter) Write(p []byte) (int, error) {
	_ = c.rc.SetWriteDeadline(time.Now().Add(c.timeout)) // unsupported writers: no deadline
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err == nil {
		if c.deferFlush {
			c.pending = true
		} else {
			err = c.rc.Flush()
		}
	}
	return n, err
}

// flush sends what Write left unflushed, within the write timeout.
func (c *clientWriter) flush() error {
	if !c.pending {
		return nil
	}
	c.pending = false
	_ = c.rc.SetWriteDeadline(time.Now().Add(c.timeout))
	return c.rc.Flush()
}

// done clears the write deadline so a kept-alive connection is not cut later.
func (c *clientWriter) done() { _ = c.rc.SetWriteDeadline(time.Time{}) }

// writeAnswer sends a whole answer held in memory (a model's JSON answer,
// a relayed refusal or model list): status, Content-Length and b, written
// in pieces of stream.buffer_bytes, each bounded by stream.write_timeout
// like a stream's, so a client that stops reading cannot hold the
// handler, b and its count for ever. A model's answer comes here with
// its bulkhead place and budget tokens already given back (proxyJSON):
// a slow reader holds no model capacity. The caller has set the other headers. It counts o, or, when a write
// fails, the failure (timeout when a deadline passed, else error) with
// the connection cut, as for a stream.
func (x *exchange) writeAnswer(status int, b []byte, o wire.Outcome) {
	x.started = true
	if status == http.StatusNoContent || status == http.StatusNotModified || status < 200 {
		b = nil // a status without a body
	} else {
		x.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	}
	x.w.WriteHeader(status)
	cw := newClientWriter(x.w, x.g.cfg.Stream.WriteTimeout)
	for len(b) > 0 {
		n := min(len(b), x.g.cfg.Stream.BufferBytes)
		if _, err := cw.Write(b[:n]); err != nil {
			x.finish(x.streamFailure(err))
			x.abort = true
			return
		}
		b = b[n:]
	}
	cw.done()
	x.finish(o)
}

// startStream sends the headers of a streamed 200 answer. The outcome
// header promises ok; the final outcome travels as the trailer
// X-Levee-Outcome-Final, and a stream that fails midway is cut (the
// client sees a broken body, never a clean end).
func (x *exchange) startStream(contentType string) {
	h := x.w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set(wire.HeaderOutcome, wire.OutcomeOK.String())
	h.Set("Trailer", wire.HeaderOutcomeFinal)
	x.started = true
	x.w.WriteHeader(http.StatusOK)
}

// endStream counts o; ok sets the trailer, anything else has the
// connection cut once the handler returns (and has released what it
// held), so the client cannot mistake a truncated stream for a whole.
func (x *exchange) endStream(o wire.Outcome) {
	x.w.Header().Set(wire.HeaderOutcomeFinal, o.String())
	x.finish(o)
	if o != wire.OutcomeOK {
		x.abort = true
	}
}

// endWholeStream counts a stream relayed whole (the model's stream ended,
// or its [DONE] reached the client): ok, or error when an event carried
// the model's error object (failed: vLLM, llama.cpp's server and OpenAI
// report a failure after their 200 that way, vLLM then [DONE]), which is
// no whole answer. Either way the stream ends cleanly, its trailer saying
// the outcome: the client has read the model's own error.
func (x *exchange) endWholeStream(failed bool) {
	o := wire.OutcomeOK
	if failed {
		o = wire.OutcomeError
	}
	x.w.Header().Set(wire.HeaderOutcomeFinal, o.String())
	x.finish(o)
}

// streamFailure classifies a failed write or read mid-stream.
func (x *exchange) streamFailure(err error) wire.Outcome {
	if x.timedOut() || isTimeout(err) || errors.Is(err, http.ErrHandlerTimeout) {
		return wire.OutcomeTimeout
	}
	return wire.OutcomeError
}

// brokenCall is what the limiter gets for a call that broke off before
// its answer was complete: a drop when the deadline passed (the request
// was too slow: a congestion signal), else no sample at all. A node that
// died mid-answer or a client that stopped reading says nothing about
// queueing at the nodes, and the truncated round trip would read as fast.
func (x *exchange) brokenCall(start time.Time) callResult {
	if x.timedOut() {
		end := time.Now()
		return callResult{rtt: end.Sub(start), end: end, dropped: true}
	}
	return callResult{}
}

// streamReq is what relaySSE needs of a streamed model request (a chat or
// a legacy completion).
type streamReq struct {
	class, path string // the upstream call's class (wire.Call…) and path
	// hasStreamOptions: the client named stream_options (the gateway then
	// adds none).
	hasStreamOptions bool
	// prompt is the prompt's estimated tokens: a stream without a usage
	// chunk is settled at this plus its counted chunks.
	prompt int64
}

// relaySSE forwards a streamed chat or text completion: events are read from the
// model through a buffer of stream.buffer_bytes and written to the client
// one at a time with a write deadline (sseRelay), and flushed before the
// relay waits for the model: at once when the model sends them one by
// one, together when the model got ahead and several wait whole in the
// buffer (a write per event then cost a system call each). An event
// never waits for the model in the gateway. The model is read only as
// fast as the client takes the events. The stream
// is metered for the token budget (see meterStream). The first data line
// of the answer is its time to first token (comments such as
// ": PROCESSING" that a model sends while the request waits are not):
// the limiter gets it at once (permit.Observe) and as the call's latency,
// since a long answer is not congestion, and levee_stream_ttft_seconds
// counts it.
func (g *Gateway) relaySSE(x *exchange, body []byte, sr streamReq, permit *admit.Permit) callResult {
	callStart := time.Now()
	m := g.meterStream(&body, sr.hasStreamOptions)
	resp, res, o, err := g.callModelRequeued(x, permit, sr.class, sr.path, body, &callStart)
	if errors.Is(err, errAnswered) {
		return callResult{}
	}
	if err != nil {
		if o == wire.OutcomeTimeout {
			x.fail(http.StatusGatewayTimeout, wire.OutcomeTimeout, "", "deadline cannot be met: "+err.Error())
		} else {
			x.upstreamFailed(http.StatusBadGateway, "upstream failed: "+err.Error(), true, res.retryAfter)
		}
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		x.writeRefusal(readRefusal(resp), true)
		return res
	}
	if ct := resp.Header.Get("Content-Type"); isJSONType(ct) {
		// A backend that ignored "stream": true answered whole: relayed
		// as a stream, its client's SSE reader would find no event and
		// end quietly, and the request would count ok.
		x.upstreamFailed(http.StatusBadGateway, "upstream answered a stream request with Content-Type "+ct+", not text/event-stream: the backend ignored \"stream\": true", true, 0)
		return res
	}
	x.startStream("text/event-stream")
	cw := newClientWriter(x.w, g.cfg.Stream.WriteTimeout)
	cw.deferFlush = true
	br := bufio.NewReaderSize(resp.Body, g.cfg.Stream.BufferBytes)
	relay := &sseRelay{w: cw, m: m, max: g.cfg.Stream.BufferBytes}
	for {
		if !lineBuffered(br) { // the read may wait for the model
			if err := cw.flush(); err != nil {
				res = x.brokenCall(callStart)
				x.endStream(x.streamFailure(err))
				return res
			}
		}
		line, rerr := br.ReadSlice('\n')
		err := relay.add(line, !errors.Is(rerr, bufio.ErrBufferFull))
		if relay.sawData && res.latency == 0 {
			res.latency = max(time.Since(callStart), time.Nanosecond)
			permit.Observe(res.latency)
			g.m.streamTTFT.Observe(res.latency.Seconds())
		}
		if err == nil && errors.Is(rerr, io.EOF) {
			if err = relay.end(); err == nil {
				err = cw.flush()
			}
		}
		switch {
		case err == nil && (rerr == nil || errors.Is(rerr, bufio.ErrBufferFull)):
			continue
		case errors.Is(rerr, io.EOF) && err == nil, relay.done:
			// The model's stream ended, or its "[DONE]" reached the
			// client, which has the whole answer then: a failure after
			// it (the client closing at [DONE] before the model's
			// stream ends) changes nothing.
			cw.done()
			res.end = time.Now()
			res.rtt = res.end.Sub(callStart)
			res.used, res.hasUsage = m.used(sr.prompt), true
			x.endWholeStream(m.Failed())
			return res
		case err != nil:
			res = x.brokenCall(callStart)
			x.endStream(x.streamFailure(err))
			return res
		default:
			res = x.brokenCall(callStart)
			x.endStream(x.streamFailure(rerr))
			return res
		}
	}
}

// isJSONType reports whether Content-Type ct names JSON
// (application/json, or a type with the +json suffix).
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// lineBuffered reports whether br holds a whole line: its next ReadSlice
// returns without reading.
func lineBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// serveExport is GET /v1/export?rows=N: a large NDJSON export generated
// locally and streamed with backpressure (seed 001): the next row is made
// only after the previous write returned, through a buffer of
// stream.buffer_bytes, each write bounded by stream.write_timeout. A slow
// client therefore costs a bounded amount of memory, and a stalled one is
// cut after the write timeout.
func (g *Gateway) serveExport(x *exchange) {
	rows := g.cfg.Stream.ExportRows
	if v := x.r.URL.Query().Get(wire.QueryExportRows); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > g.cfg.Stream.ExportMaxRows {
			x.fail(http.StatusBadRequest, wire.OutcomeError, wire.QueryExportRows, fmt.Sprintf("must be an integer in [1, %d], got %q", g.cfg.Stream.ExportMaxRows, v))
			return
		}
		rows = n
	}
	t, s := g.admitRequest(x.ctx, x.id, routeExport, 0, time.Now())
	if s != nil {
		x.shed(s)
		return
	}
	defer g.release(&t, admit.Sample{})
	x.startStream("application/x-ndjson")
	cw := newClientWriter(x.w, g.cfg.Stream.WriteTimeout)
	bw := bufio.NewWriterSize(cw, g.cfg.Stream.BufferBytes)
	row := make([]byte, 0, g.cfg.Stream.ExportRowBytes+64)
	for i := 0; i < rows; i++ {
		if i%64 == 0 && x.ctx.Err() != nil {
			x.endStream(wire.OutcomeTimeout)
			return
		}
		row = exportRow(row[:0], i, x.id.Tenant, g.cfg.Stream.ExportRowBytes)
		if _, err := bw.Write(row); err != nil {
			x.endStream(x.streamFailure(err))
			return
		}
	}
	if err := bw.Flush(); err != nil {
		x.endStream(x.streamFailure(err))
		return
	}
	cw.done()
	x.endStream(wire.OutcomeOK)
}

// exportRow appends one NDJSON row of about size bytes.
func exportRow(b []byte, i int, tenant string, size int) []byte {
	start := len(b)
	b = append(b, `{"row":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"tenant":`...)
	b = strconv.AppendQuote(b, tenant)
	b = append(b, `,"amount":`...)
	b = strconv.AppendInt(b, int64((i*7919)%100000), 10)
	b = append(b, `,"pad":"`...)
	for len(b)-start < size-3 {
		b = append(b, 'x')
	}
	b = append(b, "\"}\n"...)
	return b
}
