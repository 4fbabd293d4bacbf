package gateway

import (
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/wire"
)

// serveCompletions is POST /v1/completions, OpenAI's legacy text
// completion (eval harnesses, vLLM clients), streamed (SSE relay, as a
// chat stream) or not. It runs the chat's chain — estimate, per-request
// cap, rate limit, guard, the ai bulkhead, budget, upstream pool — and
// settles with the reported usage. It has no fallback (routeID.hasFallback).
func (g *Gateway) serveCompletions(x *exchange) {
	body, ok := x.readBody()
	if !ok {
		return
	}
	cr, err := ParseCompletionRequest(body, g.cfg.MaxTokensLimit)
	if err != nil {
		x.badRequest(err)
		return
	}
	g.serveGeneration(x, body, routeCompletions, cr, cr.Stream, wire.CallCompletion)
}

// serveEmbeddings is POST /v1/embeddings: the chain of the ai class with
// the inputs' estimated tokens as the cost (an embedding generates none),
// settled with the reported usage. It has no fallback: a vector of zeros
// would be a lie an index stores.
func (g *Gateway) serveEmbeddings(x *exchange) {
	body, ok := x.readBody()
	if !ok {
		return
	}
	er, err := ParseEmbeddingsRequest(body)
	if err != nil {
		x.badRequest(err)
		return
	}
	if g.overRequestCap(x, er.Tokens(), "input", func() string { return "input ≈ characters / 4 + token ids" }) {
		return
	}
	t, s := g.admitRequest(x.ctx, x.id, routeEmbeddings, er.Tokens(), time.Now())
	if s != nil {
		x.shedOrFallback(s, false)
		return
	}
	defer g.release(&t, admit.Sample{}) // a panic before proxyJSON released t: give it back (after: a no-op)
	g.proxyJSON(x, wire.CallEmbeddings, wire.PathEmbeddings, body, &t)
}
