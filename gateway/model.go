package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/upstream"
	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

// maxUpstreamBody bounds a non-streamed upstream answer the gateway reads,
// but for embeddings (routes.embeddings.answer_limit_bytes, see
// answerLimit). A larger answer is an error (502).
const maxUpstreamBody = 4 << 20

// answerLimit is the most of a non-streamed answer of call class class
// the gateway reads, and the setting that sets it ("" for the fixed
// maxUpstreamBody).
func (g *Gateway) answerLimit(class string) (int64, string) {
	if class == wire.CallEmbeddings {
		return g.cfg.Routes.Embeddings.AnswerLimitBytes, "routes." + wire.RouteEmbeddings + ".answer_limit_bytes"
	}
	return maxUpstreamBody, ""
}

// jsonHeader is sent with every upstream call; the pool clones it.
var jsonHeader = http.Header{"Content-Type": {"application/json"}}

// Fallback answers. Every fallback says so in the body and in the
// X-Levee-Fallback header.
var (
	predictFallback = map[string]any{"decision": "REVIEW", "score": 0.5, wire.FieldFallback: true}
)

// chatFallback is the fallback chat completion, with every field OpenAI's
// schema marks required (clients that decode strictly refuse an answer
// without "created").
func chatFallback() map[string]any {
	return map[string]any{
		"id": "levee-fallback", "object": "chat.completion", "created": time.Now().Unix(), "model": "levee-fallback",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": "The model is unavailable right now; this is Levee's static fallback answer."},
			"finish_reason": "stop",
		}},
		wire.FieldFallback: true,
	}
}

// Which failures fall back (when the fallback defense is on): level black
// and upstream failures, on predict, chat and agent (routeID.hasFallback:
// never on completions and embeddings). Rate limiting, yellow
// and red shedding, queue full/timeout and the budget stay sheds, so
// clients see backpressure; a passed deadline stays a timeout.

// fallback answers with the route's fallback and counts it.
func (x *exchange) fallback(reason string) {
	x.g.m.fallbacks.with(x.route.String(), reason).Inc()
	switch x.route {
	case routePredict:
		x.reply(wire.OutcomeFallback, predictFallback)
	case routeAgent:
		x.reply(wire.OutcomeFallback, map[string]any{
			"answer": "Handled by rules: the model is not consulted right now.", "depth": 0, wire.FieldFallback: true,
		})
	default:
		x.reply(wire.OutcomeFallback, chatFallback())
	}
}

// fallbackStream answers a streaming chat request with one SSE event of
// the fallback answer.
func (x *exchange) fallbackStream(reason string) {
	x.g.m.fallbacks.with(x.route.String(), reason).Inc()
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set(wire.HeaderOutcome, wire.OutcomeFallback.String())
	h.Set(wire.HeaderFallback, "true")
	x.finish(wire.OutcomeFallback) // before the answer, which nothing checks
	x.started = true
	x.w.WriteHeader(http.StatusOK)
	chunk := map[string]any{
		"id": "levee-fallback", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": "levee-fallback",
		"choices":          []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "The model is unavailable right now; this is Levee's static fallback answer."}, "finish_reason": "stop"}},
		wire.FieldFallback: true,
	}
	b, _ := json.Marshal(chunk)
	_, _ = fmt.Fprintf(x.w, "data: %s\n\ndata: [DONE]\n\n", b)
}

// upstreamFailed answers an upstream failure: the fallback when it is on
// and the route has one, else an error with status, carrying the
// model's own Retry-After when its last answer (429, 5xx) had one
// (retryAfter > 0; see upstreamRetryAfter).
func (x *exchange) upstreamFailed(status int, msg string, stream bool, retryAfter time.Duration) {
	if x.g.on(defFallback) && x.route.hasFallback() {
		if stream {
			x.fallbackStream(wire.FallbackUpstream)
		} else {
			x.fallback(wire.FallbackUpstream)
		}
		return
	}
	if retryAfter > 0 {
		x.w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(retryAfter)))
	}
	x.fail(status, wire.OutcomeError, "", msg)
}

// shedOrFallback answers a refused request: level black serves the
// fallback (when on), anything else is a shed.
func (x *exchange) shedOrFallback(s *shed, stream bool) {
	if s.black && x.g.on(defFallback) && x.route.hasFallback() {
		if stream {
			x.fallbackStream(wire.FallbackBlack)
		} else {
			x.fallback(wire.FallbackBlack)
		}
		return
	}
	x.shed(s)
}

// callResult is one upstream call's result as the limiter sees it: rtt 0
// means no sample (see Permit.Release); latency is a stream's time to
// first token (0: the rtt).
type callResult struct {
	rtt     time.Duration
	end     time.Time // when rtt was taken
	dropped bool
	refused bool // every node tried answered 429: none took the call
	latency time.Duration
	// retryAfter is the Retry-After of the model's failed answer (0: none).
	retryAfter time.Duration
	// used is the tokens the model reported (answer usage, a stream's
	// usage chunk or its counted chunks) when hasUsage.
	used     int64
	hasUsage bool
}

// sample is the limiter's view of the call.
func (r callResult) sample() admit.Sample {
	return admit.Sample{RTT: r.rtt, Latency: r.latency, Dropped: r.dropped, Refused: r.refused, End: r.end}
}

// callModel makes one upstream call of priority prio and call class (a
// wire.Call… name: the pool keeps latencies, so attempt timeouts and hedge
// delays, per class) for x and classifies a failure. On success it returns
// the response (status < 500 and not 429) for the caller to read and
// close. On failure it returns the outcome to answer: timeout when the
// deadline cannot be met or has passed — also when a 5xx or a refusal
// (429) came back as it passed — else an upstream failure
// (fallback-eligible).
func (g *Gateway) callModel(ctx context.Context, prio admit.Priority, class, path string, body []byte) (*http.Response, callResult, wire.Outcome, error) {
	start := time.Now()
	resp, err := g.pool.Send(ctx, upstream.Call{
		Method: http.MethodPost, Path: path, Body: body, Header: jsonHeader,
		Priority: int(prio), Class: class,
	})
	end := time.Now()
	rtt := end.Sub(start)
	if err != nil {
		if errors.Is(err, upstream.ErrDeadline) || deadlinePassed(ctx, end) {
			g.lat.observe(rtt)
			return nil, callResult{rtt: rtt, end: end, dropped: true}, wire.OutcomeTimeout, err
		}
		// No node answered (refused, reset, no healthy node, breaker
		// open): that says nothing about queueing at the nodes, and an
		// instant reset would read as a fast round trip. The limiter gets
		// no sample; the capacity lost shows in the others' RTT.
		return nil, callResult{}, wire.OutcomeError, err
	}
	g.lat.observe(rtt)
	g.nodeSignals.observe(resp, time.Now())
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if deadlinePassed(ctx, end) {
			// The deadline passed as the failure came: nothing could
			// have followed it (no retry, no wait for a place), so the
			// request timed out, as one whose attempt was cut there.
			return nil, callResult{rtt: rtt, end: end, dropped: true}, wire.OutcomeTimeout,
				fmt.Errorf("upstream answered %d as the deadline passed", resp.StatusCode)
		}
		// The pool returns a 429 only when nothing better came: no node
		// took the call.
		refused := resp.StatusCode == http.StatusTooManyRequests
		ra := upstreamRetryAfter(resp.Header.Get("Retry-After"), end)
		return nil, callResult{rtt: rtt, end: end, dropped: true, refused: refused, retryAfter: ra}, wire.OutcomeError, fmt.Errorf("upstream answered %d", resp.StatusCode)
	}
	return resp, callResult{rtt: rtt, end: end}, wire.OutcomeOK, nil
}

// deadlinePassed reports whether ctx ended or its deadline is not after
// now: the deadline counts from the moment it passes, before ctx's own
// timer has ended it.
func deadlinePassed(ctx context.Context, now time.Time) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !now.Before(d)
}

// readAnswer reads a non-streamed upstream answer (closing it) and checks
// it is JSON and at most limit bytes; the error of a longer one names
// setting, the limit's (when not "").
func readAnswer(resp *http.Response, limit int64, setting string) ([]byte, error) {
	defer resp.Body.Close()
	b, err := readAll(io.LimitReader(resp.Body, limit+1), resp.ContentLength, limit)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		if setting != "" {
			return nil, fmt.Errorf("upstream answer exceeds %s (%d bytes): split the batch, or raise the limit", setting, limit)
		}
		return nil, fmt.Errorf("upstream answer exceeds %d bytes", limit)
	}
	if !openai.Valid(b) { // json.Valid's answer, faster
		return nil, errors.New("upstream answer is not JSON")
	}
	return b, nil
}

// readAll is io.ReadAll of r into a buffer of the body's length when it
// is known (size, at most limit: a request's or an answer's
// Content-Length): one allocation, where io.ReadAll grows its buffer
// step by step, copying, to about twice a large body's bytes (2.5 × in
// BenchmarkReadAnswerUnknownLength). Of unknown length (a chunked body,
// size < 0, or one said to pass the limit), it is readPieces.
func readAll(r io.Reader, size, limit int64) ([]byte, error) {
	if size < 0 || size > limit {
		return readPieces(r)
	}
	b := make([]byte, 0, size+1) // the 1: room for the read that meets EOF
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than said: grow as io.ReadAll does
		}
	}
}

// pieceSize is the size of the pieces readPieces reads into.
const pieceSize = 32 << 10

// pieces holds the pieces readPieces reads into, reused across reads.
var pieces = sync.Pool{New: func() any { return new([pieceSize]byte) }}

// readPieces is io.ReadAll of r, whose length is unknown: read into
// pooled pieces of pieceSize, then copied once into a buffer of exactly
// its length. Its allocations are about its length (the pieces come back
// to the pool), where io.ReadAll's growing pieces and that copy cost 2.5
// times it.
func readPieces(r io.Reader) ([]byte, error) {
	full := make([]*[pieceSize]byte, 0, 64)
	cur, n := pieces.Get().(*[pieceSize]byte), 0
	var err error
	for {
		var m int
		m, err = r.Read(cur[n:])
		n += m
		if err != nil {
			break
		}
		if n == pieceSize {
			full = append(full, cur)
			cur, n = pieces.Get().(*[pieceSize]byte), 0
		}
	}
	if err == io.EOF {
		err = nil
	}
	b := make([]byte, 0, len(full)*pieceSize+n)
	for _, p := range full {
		b = append(b, p[:]...)
		pieces.Put(p)
	}
	b = append(b, cur[:n]...)
	pieces.Put(cur)
	return b, err
}

// proxyJSON forwards body to path as a call of class, relays a JSON
// answer and releases t (a call that no node took waits for its place
// again on t's permit: see requeue); stream is false here. What t holds —
// the bulkhead place, the budget's tokens, the token-cost rule's charge
// to settle with the reported usage — guards the model's work, so it is
// released as soon as that work is over: the answer read whole into the
// gateway (or the call failed), before the answer is written. A client
// that reads slowly then holds its connection, its goroutine and the
// answer's bytes (each write bounded by stream.write_timeout), never model
// capacity. The limiter's sample ends there too; the outcome is counted
// once, when the write ends (ok, or the client's failure).
func (g *Gateway) proxyJSON(x *exchange, class, path string, body []byte, t *ticket) {
	callStart := time.Now()
	resp, res, o, err := g.callModelRequeued(x, &t.permit, class, path, body, &callStart)
	if errors.Is(err, errAnswered) {
		g.releaseCall(t, callResult{})
		return
	}
	if err != nil {
		g.releaseCall(t, res)
		if o == wire.OutcomeTimeout {
			x.fail(http.StatusGatewayTimeout, wire.OutcomeTimeout, "", "deadline cannot be met: "+err.Error())
		} else {
			x.upstreamFailed(http.StatusBadGateway, "upstream failed: "+err.Error(), false, res.retryAfter)
		}
		return
	}
	if resp.StatusCode != http.StatusOK {
		r := readRefusal(resp)
		res.end = time.Now()
		res.rtt = res.end.Sub(callStart)
		g.releaseCall(t, res)
		x.writeRefusal(r, false)
		return
	}
	ctype := resp.Header.Get("Content-Type")
	limit, setting := g.answerLimit(class)
	b, err := readAnswer(resp, limit, setting)
	res.end = time.Now()
	res.rtt = res.end.Sub(callStart)
	if err != nil {
		g.releaseCall(t, x.brokenCall(callStart))
		if x.timedOut() {
			x.fail(http.StatusGatewayTimeout, wire.OutcomeTimeout, "", "deadline passed reading the upstream answer")
		} else {
			x.upstreamFailed(http.StatusBadGateway, "upstream answer: "+err.Error(), false, 0)
		}
		return
	}
	if u, ok := openai.ValidAnswerUsage(b); ok { // readAnswer checked it is JSON
		res.used, res.hasUsage = u.Total(), true
	}
	g.releaseCall(t, res) // the model's part is over: before the client's
	h := x.w.Header()
	if ctype == "" {
		ctype = "application/json"
	}
	h.Set("Content-Type", ctype)
	h.Set(wire.HeaderOutcome, wire.OutcomeOK.String())
	x.writeAnswer(http.StatusOK, b, wire.OutcomeOK)
}

// servePredict is POST /v1/predict (seed 000's decision call).
func (g *Gateway) servePredict(x *exchange) {
	body, ok := x.readBody()
	if !ok {
		return
	}
	pr, err := ParsePredictRequest(body)
	if err != nil {
		x.badRequest(err)
		return
	}
	if g.overRequestCap(x, pr.Tokens(), "features", func() string { return "the body's bytes / 4 + the default completion" }) {
		return
	}
	t, s := g.admitRequest(x.ctx, x.id, routePredict, pr.Tokens(), time.Now())
	if s != nil {
		x.shedOrFallback(s, false)
		return
	}
	defer g.release(&t, admit.Sample{}) // a panic before proxyJSON released t: give it back (after: a no-op)
	g.proxyJSON(x, wire.CallPredict, wire.PathPredict, body, &t)
}

// serveChat is POST /v1/chat/completions, streamed (SSE relay) or not.
func (g *Gateway) serveChat(x *exchange) {
	body, ok := x.readBody()
	if !ok {
		return
	}
	cr, err := ParseChatRequest(body, g.cfg.MaxTokensLimit)
	if err != nil {
		x.badRequest(err)
		return
	}
	g.serveGeneration(x, body, routeChat, cr, cr.Stream, wire.CallChat)
}

// generation is a parsed chat or text completion: what serveGeneration
// needs of it.
type generation interface {
	Tokens() int64     // the estimate admission charges
	costField() string // the field to blame for an estimate over the cap
	costParts() string // what the estimate is made of
	streamReq() streamReq
}

// serveGeneration runs a chat or text completion through the ai chain:
// the per-request cap, admission as route, then the model's answer whole
// (proxyJSON, as upstream call class call) or relayed as SSE (relaySSE).
func (g *Gateway) serveGeneration(x *exchange, body []byte, route routeID, req generation, stream bool, call string) {
	tokens := req.Tokens()
	if g.overRequestCap(x, tokens, req.costField(), req.costParts) {
		return
	}
	t, s := g.admitRequest(x.ctx, x.id, route, tokens, time.Now())
	if s != nil {
		x.shedOrFallback(s, stream)
		return
	}
	defer g.release(&t, admit.Sample{}) // a panic before t's release: give it back (after: a no-op)
	sr := req.streamReq()
	if !stream {
		g.proxyJSON(x, call, sr.path, body, &t)
		return
	}
	res := g.relaySSE(x, body, sr, &t.permit)
	g.releaseCall(&t, res)
}

// serveStandard is GET /v1/standard/...: a light route served locally.
func (g *Gateway) serveStandard(x *exchange) {
	t, s := g.admitRequest(x.ctx, x.id, routeStandard, 0, time.Now())
	if s != nil {
		x.shed(s)
		return
	}
	var buf bytes.Buffer
	buf.WriteString(`{"ok":true,"path":`)
	p, _ := json.Marshal(x.r.URL.Path)
	buf.Write(p)
	buf.WriteString(`,"tenant":`)
	tn, _ := json.Marshal(x.id.Tenant)
	buf.Write(tn)
	buf.WriteString(`,"priority":"` + x.id.Priority.String() + `"}` + "\n")
	g.release(&t, admit.Sample{})
	x.finish(wire.OutcomeOK) // before the answer, which nothing checks
	x.started = true
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(wire.HeaderOutcome, wire.OutcomeOK.String())
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(buf.Bytes())
}
