package fakemodel

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/levee-lab/levee/internal/openai"
)

// handleCompletions is POST /v1/completions, OpenAI's legacy text
// completion: its prompts' tokens and every sequence's (prompts × best_of)
// cost service time as a chat's do; streamed, every returned sequence
// gets its token at each step (one batch decoding them together).
func (n *Node) handleCompletions(w http.ResponseWriter, r *http.Request) {
	body, ok := n.readBody(w, r)
	if !ok {
		return
	}
	c, err := openai.ParseCompletion(body, n.opts.maxTokens)
	if err != nil {
		n.badRequest(w, err)
		return
	}
	model := c.Model
	if model == "" {
		model = DefaultModel
	}
	compl, finish := ChatRequest{MaxTokens: c.MaxTokens}.Completion(n.Knobs().AnswerTokens)
	n.serve(w, r, job{stream: c.Stream, legacy: true, model: model, promptTokens: promptTokens(c.Prompt),
		complTokens: compl, seqs: c.Sequences(), choices: c.Prompt.Count * c.N, finish: finish, includeUsage: c.IncludeUsage}.withStop(c.Stop))
}

// promptTokens is what usage counts of a text completion's prompts or an
// embedding's inputs: their estimate (openai.Prompt.EstimatedTokens),
// and at least one token for each, as a tokenizer gives every non-empty
// text one at least (["a","b","c","d"] was 1 token for 4 inputs).
func promptTokens(p openai.Prompt) int { return max(1, p.Count, int(p.EstimatedTokens())) }

// MaxEmbeddingDims bounds the dimensions of a fake embedding.
const MaxEmbeddingDims = 4096

// defaultEmbeddingDims is a fake embedding's length when the request
// names no dimensions.
const defaultEmbeddingDims = 8

// handleEmbeddings is POST /v1/embeddings: one forward pass over the
// inputs and no decoding, so its service time is a stream's time to first
// token for the inputs' tokens (knobs ttft_ms, ms_per_1k_tokens,
// latency_multiplier, latency_add_ms, slowdown), not the latency
// distribution of an answer. It answers fixed vectors of dimensions
// floats (defaultEmbeddingDims when absent), as floats or base64.
func (n *Node) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	body, ok := n.readBody(w, r)
	if !ok {
		return
	}
	e, err := openai.ParseEmbeddings(body)
	if err == nil && e.Dimensions > MaxEmbeddingDims {
		err = &openai.RequestError{Field: "dimensions", Msg: fmt.Sprintf("the fake model makes at most %d, got %d", MaxEmbeddingDims, e.Dimensions)}
	}
	if err != nil {
		n.badRequest(w, err)
		return
	}
	model := e.Model
	if model == "" {
		model = DefaultModel
	}
	dims := e.Dimensions
	if dims == 0 {
		dims = defaultEmbeddingDims
	}
	n.serve(w, r, job{embed: true, model: model, promptTokens: promptTokens(e.Input),
		inputs: e.Input.Count, dims: dims, base64: e.EncodingFormat == "base64"})
}

// textChoice is one choice of a text completion, streamed or not.
type textChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

// TextCompletion is the answer of /v1/completions (a stream chunk too).
type TextCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []textChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
}

// appendTextChunk appends one SSE event of a streamed text completion:
// choice index's text (its finish_reason when finish is not nil).
func appendTextChunk(buf []byte, id string, created int64, model string, index int, text string, finish *string) []byte {
	b, _ := json.Marshal(TextCompletion{ID: id, Object: "text_completion", Created: created, Model: model,
		Choices: []textChoice{{Index: index, Text: text, FinishReason: finish}}})
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	return append(buf, "\n\n"...)
}

func (n *Node) textCompletion(j job) TextCompletion {
	text, u := j.answerText(), usage(j)
	tc := TextCompletion{ID: n.newID(idText), Object: "text_completion", Created: time.Now().Unix(), Model: j.model,
		Choices: make([]textChoice, j.numChoices()), Usage: &u}
	for c := range tc.Choices {
		tc.Choices[c] = textChoice{Index: c, Text: text, FinishReason: &j.finish}
	}
	return tc
}

// EmbeddingsAnswer is the answer of /v1/embeddings.
type EmbeddingsAnswer struct {
	Object string      `json:"object"`
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  Usage       `json:"usage"`
}

// Embedding is one input's vector: []float32, or a base64 string of
// little-endian float32s.
type Embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// embeddings makes j's answer: input i's vector is a fixed unit-length
// pattern of j.dims floats, the same on every node.
func embeddings(j job) EmbeddingsAnswer {
	vec := make([]float32, j.dims)
	for d := range vec {
		vec[d] = float32(1 / math.Sqrt(float64(j.dims)))
		if d%2 == 1 {
			vec[d] = -vec[d]
		}
	}
	var v any = vec
	if j.base64 {
		b := make([]byte, 4*len(vec))
		for d, f := range vec {
			binary.LittleEndian.PutUint32(b[4*d:], math.Float32bits(f))
		}
		v = base64.StdEncoding.EncodeToString(b)
	}
	a := EmbeddingsAnswer{Object: "list", Data: make([]Embedding, j.inputs), Model: j.model,
		Usage: Usage{PromptTokens: j.promptTokens, TotalTokens: j.promptTokens}}
	for i := range a.Data {
		a.Data[i] = Embedding{Object: "embedding", Index: i, Embedding: v}
	}
	return a
}
