// Package fakemodel is a fake, slow, OpenAI-compatible model backend for the
// Levee lab. It behaves like an overloaded LLM server, honestly: every
// request holds one of a fixed number of slots for a sampled service time,
// and what happens beyond the slots (an unbounded FIFO queue, a bounded
// queue, or an immediate 429) is a knob. Latency, errors, hangs, slow-down
// under load, abort on client disconnect and in-process GC/CPU pressure are
// knobs too, changed at run time over an admin API.
//
// Errors are OpenAI-shaped with type and code (writeError). max_tokens is
// bounded by WithMaxTokens (levee fakemodel --max-tokens; default 32768).
//
// A Node is one listener with one knob set. A Server runs N nodes in one
// process; the lab runs one node per process so that losing a node is a real
// SIGKILL and clients see real connection errors.
//
// Routes on each node (see docs/CONTRACTS.md):
//
//	POST /v1/chat/completions   OpenAI-shaped completion of n choices, or SSE when "stream":true
//	POST /v1/completions        text_completion (prompts × n choices), or SSE when "stream":true
//	POST /v1/embeddings         a fixed unit vector per input
//	POST /v1/predict            {"decision":"APPROVE|REVIEW|DECLINE","score":0.87}
//	GET  /v1/models             the one model, DefaultModel
//	GET  /healthz (and /health, vLLM's name), /readyz, /metrics
//	GET|PUT|PATCH /admin/knobs  bearer token; loopback peers only unless AdminAny
package fakemodel
