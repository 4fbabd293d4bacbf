package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/levee-lab/levee/internal/httpbody"
	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

// DefaultModel is the model a fake node answers as when a request names
// none, and the one GET /v1/models lists.
const DefaultModel = "levee-fake"

func (n *Node) handleChat(w http.ResponseWriter, r *http.Request) {
	body, ok := n.readBody(w, r)
	if !ok {
		return
	}
	req, err := ParseChatRequest(body, n.opts.maxTokens)
	if err != nil {
		n.badRequest(w, err)
		return
	}
	model := req.Model
	if model == "" {
		model = DefaultModel
	}
	compl, finish := req.Completion(n.Knobs().AnswerTokens)
	n.serve(w, r, job{stream: req.Stream, model: model, promptTokens: req.PromptTokens(), complTokens: compl,
		seqs: req.N, choices: req.N, finish: finish, includeUsage: req.IncludeUsage}.withStop(req.Stop))
}

// handleModels is GET /v1/models: OpenAI's model list, the one model a
// fake node answers as when a request names none, created when the node
// started (as vLLM's, a time: 0 read as 1970 in a client).
func (n *Node) handleModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: use GET", "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": DefaultModel, "object": "model", "created": n.started.Unix(), "owned_by": "levee"},
	}})
}

func (n *Node) handlePredict(w http.ResponseWriter, r *http.Request) {
	body, ok := n.readBody(w, r)
	if !ok {
		return
	}
	req, err := ParsePredictRequest(body)
	if err != nil {
		n.badRequest(w, err)
		return
	}
	n.serve(w, r, job{predict: true, promptTokens: req.Bytes / 4})
}

// readBody checks the method and reads at most MaxBodyBytes, without a
// leading UTF-8 byte order mark (openai.TrimBOM); it answers the error
// itself and reports false when the request cannot go on.
func (n *Node) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		n.count(OutcomeBadRequest)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: use POST", "")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err == nil {
		httpbody.Done(w) // the answer may take long: no read deadline while it is made
	}
	if err != nil {
		n.count(OutcomeBadRequest)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBodyBytes), "")
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "reading body: "+err.Error(), "")
		return nil, false
	}
	return openai.TrimBOM(body), true
}

func (n *Node) badRequest(w http.ResponseWriter, err error) {
	n.count(OutcomeBadRequest)
	var re *openai.RequestError
	if errors.As(err, &re) {
		writeError(w, http.StatusBadRequest, re.Error(), re.Field)
		return
	}
	writeError(w, http.StatusBadRequest, err.Error(), "")
}

// serve takes a slot per the overflow policy, then plays the request: hang,
// injected error, stream or plain answer.
func (n *Node) serve(w http.ResponseWriter, r *http.Request, j job) {
	ctx := r.Context()
	k := n.Knobs()
	err := n.slots.acquire(ctx, k.Overflow, k.QueueSize, k.AbortOnDisconnect, n.closed)
	n.markBackpressure(w)
	switch {
	case errors.Is(err, errNoSlot):
		n.count(OutcomeRejected)
		w.Header().Set("Retry-After", "1")
		writeErrorCode(w, http.StatusTooManyRequests, wire.CodeOverloaded, fmt.Sprintf("all %d slots busy (overflow %s)", k.Slots, k.Overflow), "")
		return
	case errors.Is(err, errClosed):
		n.count(OutcomeRejected)
		writeError(w, http.StatusServiceUnavailable, "node shutting down", "")
		return
	case err != nil: // the client left while queued, and abort_on_disconnect is on
		n.count(OutcomeAborted)
		return
	}
	defer n.slots.release()
	cur := n.serving.Add(1)
	defer n.serving.Add(-1)
	for m := n.maxServing.Load(); cur > m && !n.maxServing.CompareAndSwap(m, cur); m = n.maxServing.Load() {
	}

	k = n.Knobs() // knobs may have changed while the request waited
	busy, _, _ := n.slots.state()
	hang, fail := k.fate(nil)
	if hang {
		n.hang(w, ctx)
		return
	}
	start := time.Now()
	if j.stream && !fail {
		n.stream(w, ctx, k, j, busy, start)
		return
	}
	d := k.ServiceTime(k.Latency.Sample(nil), j.promptTokens+j.generated(), busy)
	if j.stream || j.embed { // an injected stream error comes when the first token would; an embedding is that prefill alone
		d = k.TTFT(busy, j.promptTokens)
	}
	if !n.work(ctx, start.Add(d), k.AbortOnDisconnect) {
		panic(http.ErrAbortHandler) // hard close: see work
	}
	n.markBackpressure(w)
	el := time.Since(start)
	n.metrics.service.Observe(el.Seconds())
	if ctx.Err() != nil {
		n.metrics.wasted.Add(el.Seconds())
		n.count(OutcomeAborted)
		return
	}
	if fail {
		n.count(OutcomeError)
		writeError(w, http.StatusInternalServerError, "injected model error", "")
		return
	}
	n.count(OutcomeOK)
	switch {
	case j.predict:
		writeJSON(w, http.StatusOK, predictAnswer(rand.Float64()))
	case j.embed:
		writeJSON(w, http.StatusOK, embeddings(j))
	case j.legacy:
		writeJSON(w, http.StatusOK, n.textCompletion(j))
	default:
		writeJSON(w, http.StatusOK, n.completion(j))
	}
}

// work waits until due, the time the work is done. With abort it stops early
// when the client leaves. It reports false when the node closed meanwhile:
// the caller then aborts the handler (http.ErrAbortHandler) so the
// connection is cut. A handler that just returned was finished by
// net/http as an empty 200 whenever that flushed before Close cut the
// connection: a success for work never done.
func (n *Node) work(ctx context.Context, due time.Time, abort bool) bool {
	var gone <-chan struct{}
	if abort {
		gone = ctx.Done()
	}
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-t.C:
	case <-gone:
	case <-n.closed:
		return false
	}
	return true
}

// hang holds the slot and never answers until the client gives up; on
// shutdown it answers 503. The time it held the slot is service time like
// any other (levee_fakemodel_service_seconds): a node whose slots hang
// turns them over no faster than its clients give up, and the lab's
// capacity line, slots / observed service time, has to see that.
func (n *Node) hang(w http.ResponseWriter, ctx context.Context) {
	start := time.Now()
	select {
	case <-ctx.Done():
		n.metrics.service.Observe(time.Since(start).Seconds())
		n.count(OutcomeHang)
	case <-n.stopHangs:
		n.metrics.service.Observe(time.Since(start).Seconds())
		n.count(OutcomeHang)
		writeError(w, http.StatusServiceUnavailable, "node shutting down", "")
	}
}

// stream sends an SSE completion: the first token after TTFT (the prompt's
// token cost included), then one token per TokenInterval, flushing each. With abort it stops when the client
// leaves; without, it plays the stream to its end anyway (wasted work).
func (n *Node) stream(w http.ResponseWriter, ctx context.Context, k Knobs, j job, busy int, start time.Time) {
	flusher, _ := w.(http.Flusher)
	ttft, every := k.TTFT(busy, j.promptTokens), k.TokenInterval(busy)
	prefix := idChat
	if j.legacy {
		prefix = idText
	}
	id, created := n.newID(prefix), time.Now().Unix()
	gone := false
	var buf []byte
	at := 0 // bytes of the answer before token i
	for i := range j.complTokens {
		tok := j.tokenText(i, at)
		at += len(word(i))
		if !n.work(ctx, start.Add(tokenDue(ttft, every, i)), k.AbortOnDisconnect) {
			panic(http.ErrAbortHandler) // hard close: see work
		}
		if ctx.Err() != nil {
			gone = true
			if k.AbortOnDisconnect {
				break
			}
		}
		if gone || (tok == "" && i > 0) { // a token the stop sequence took: no chunk, as vLLM sends none
			continue
		}
		if i == 0 {
			n.markBackpressure(w)
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
		}
		buf = buf[:0]
		for c := range j.numChoices() { // one batch step: every choice's token, a chunk each
			if j.legacy {
				buf = appendTextChunk(buf, id, created, j.model, c, tok, nil)
				continue
			}
			delta := map[string]string{"content": tok}
			if i == 0 {
				delta["role"] = "assistant"
			}
			buf = appendChunk(buf, id, created, j.model, c, delta, nil)
		}
		if _, err := w.Write(buf); err != nil {
			gone = true
			if k.AbortOnDisconnect {
				break
			}
			continue
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	el := time.Since(start)
	n.metrics.service.Observe(el.Seconds())
	if gone || ctx.Err() != nil {
		n.metrics.wasted.Add(el.Seconds())
		n.count(OutcomeAborted)
		return
	}
	if j.complTokens == 0 { // nothing streamed yet: the headers go now
		n.markBackpressure(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
	obj := "chat.completion.chunk"
	if j.legacy {
		obj = "text_completion"
	}
	buf = buf[:0]
	for c := range j.numChoices() {
		if j.legacy {
			buf = appendTextChunk(buf, id, created, j.model, c, "", &j.finish)
		} else {
			buf = appendChunk(buf, id, created, j.model, c, map[string]string{}, &j.finish)
		}
	}
	if j.includeUsage {
		buf = appendUsageChunk(buf, obj, id, created, j.model, usage(j))
	}
	buf = append(buf, "data: [DONE]\n\n"...)
	_, _ = w.Write(buf)
	if flusher != nil {
		flusher.Flush()
	}
	n.count(OutcomeOK)
}

type chunkChoice struct {
	Index        int               `json:"index"`
	Delta        map[string]string `json:"delta"`
	FinishReason *string           `json:"finish_reason"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// appendUsageChunk appends the final chunk of stream_options.include_usage:
// no choices, the usage of the whole answer.
func appendUsageChunk(buf []byte, object, id string, created int64, model string, u Usage) []byte {
	b, _ := json.Marshal(chunk{ID: id, Object: object, Created: created, Model: model,
		Choices: []chunkChoice{}, Usage: &u})
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	return append(buf, "\n\n"...)
}

func usage(j job) Usage {
	return Usage{PromptTokens: j.promptTokens, CompletionTokens: j.generated(), TotalTokens: j.promptTokens + j.generated()}
}

// appendChunk appends one SSE event of a streamed chat completion: choice
// index's delta (its finish_reason when finish is not nil).
func appendChunk(buf []byte, id string, created int64, model string, index int, delta map[string]string, finish *string) []byte {
	b, _ := json.Marshal(chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		Choices: []chunkChoice{{Index: index, Delta: delta, FinishReason: finish}}})
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	return append(buf, "\n\n"...)
}

// Completion is the OpenAI-shaped non-stream answer.
type Completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   Usage              `json:"usage"`
}

// CompletionChoice is one choice of a Completion.
type CompletionChoice struct {
	Index        int     `json:"index"`
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason"`
}

// Message is an answer message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// completion is a chat's answer: n choices of the same text, usage
// counting every one.
func (n *Node) completion(j job) Completion {
	text := j.answerText()
	c := Completion{ID: n.newID(idChat), Object: "chat.completion", Created: time.Now().Unix(), Model: j.model,
		Choices: make([]CompletionChoice, j.numChoices()), Usage: usage(j)}
	for i := range c.Choices {
		c.Choices[i] = CompletionChoice{Index: i, Message: Message{Role: "assistant", Content: text}, FinishReason: j.finish}
	}
	return c
}

// Answer id prefixes, OpenAI's and vLLM's: a chat completion's id starts
// with chatcmpl-, a text completion's with cmpl-.
const (
	idChat = "chatcmpl-"
	idText = "cmpl-"
)

// newID is a fresh answer id: prefix, then levee-, the node's random tag
// and a sequence number, unique across the nodes of a lab and across
// restarts, as a client or a log that keys on ids expects.
func (n *Node) newID(prefix string) string {
	return prefix + "levee-" + n.idTag + "-" + strconv.FormatUint(n.seq.Add(1), 10)
}

var words = strings.Fields("the levee holds while the river rises slowly and the queue drains one slot at a time")

// wordsPeriod is the bytes of len(words) tokens: the answer text repeats
// with this period.
var wordsPeriod = len(strings.Join(words, " ")) + 1

// word is the i-th token of every fake answer.
func word(i int) string { return words[i%len(words)] + " " }

// Prediction is the /v1/predict answer.
type Prediction struct {
	Decision string  `json:"decision"`
	Score    float64 `json:"score"`
}

func predictAnswer(score float64) Prediction {
	score = float64(int(score*100)) / 100
	switch {
	case score >= 0.7:
		return Prediction{Decision: "APPROVE", Score: score}
	case score >= 0.4:
		return Prediction{Decision: "REVIEW", Score: score}
	default:
		return Prediction{Decision: "DECLINE", Score: score}
	}
}
