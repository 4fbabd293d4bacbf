package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

// Request limits of the model routes.
const (
	// DefaultMaxTokens is the completion budget assumed when a request
	// names no max_tokens.
	DefaultMaxTokens = openai.DefaultMaxTokens
	// MaxMaxTokens is the default of max_tokens_limit, the bound of
	// max_tokens: the fake model's own bound (openai.MaxTokens).
	MaxMaxTokens = openai.MaxTokens
	// DefaultAgentMaxTokens is one agent sub-call's completion budget.
	DefaultAgentMaxTokens = 64
)

// ChatRequest is what the gateway reads of an OpenAI chat completion
// request; the body itself is relayed upstream unchanged.
type ChatRequest struct {
	Stream    bool
	MaxTokens int
	// Choices is n: the answers to generate, each up to MaxTokens long.
	Choices     int
	PromptChars int // characters of all message text
	Messages    int
	// IncludeUsage is stream_options.include_usage; HasStreamOptions
	// whether the body named stream_options at all.
	IncludeUsage, HasStreamOptions bool
}

// Tokens is the request's estimated cost: the prompt's characters / 4
// plus MaxTokens for each of its Choices.
func (c ChatRequest) Tokens() int64 { return estimateTokens(c.PromptChars, c.completion()) }

// completion is the most the answer may take: max_tokens × n.
func (c ChatRequest) completion() int { return c.MaxTokens * max(c.Choices, 1) }

// streamReq is what relaySSE needs of a streamed chat.
func (c ChatRequest) streamReq() streamReq {
	return streamReq{class: wire.CallChatStream, path: wire.PathChat, hasStreamOptions: c.HasStreamOptions, prompt: estimateTokens(c.PromptChars, 0)}
}

// costField is the field to blame for an estimate over the per-request
// cap: the prompt when it is the larger part, else max_tokens.
func (c ChatRequest) costField() string {
	if estimateTokens(c.PromptChars, 0) > int64(c.completion()) {
		return "messages"
	}
	return "max_tokens"
}

// costParts says what the estimate is made of, for an error message.
func (c ChatRequest) costParts() string {
	s := fmt.Sprintf("prompt ≈ %d + max_tokens %d", estimateTokens(c.PromptChars, 0), c.MaxTokens)
	if c.Choices > 1 {
		s += fmt.Sprintf(" × n %d", c.Choices)
	}
	return s
}

// ParseChatRequest checks a chat completion body (openai.ParseChat with
// max_tokens ≤ maxTokens, the gateway's max_tokens_limit; DefaultMaxTokens
// when unset; 1 ≤ n ≤ openai.MaxChoices) and measures its prompt. Errors
// are *openai.RequestError.
func ParseChatRequest(body []byte, maxTokens int) (ChatRequest, error) {
	c, err := openai.ParseChat(body, maxTokens)
	if err != nil {
		return ChatRequest{}, err
	}
	req := ChatRequest{Stream: c.Stream, MaxTokens: c.Completion(), Choices: c.N, Messages: len(c.Messages),
		IncludeUsage: c.IncludeUsage, HasStreamOptions: c.HasStreamOptions}
	for _, m := range c.Messages {
		req.PromptChars += utf8.RuneCountInString(m.Content)
	}
	return req, nil
}

// PredictRequest is what the gateway reads of a /v1/predict body.
type PredictRequest struct {
	Bytes int // body size: the features' cost stand-in
}

// Tokens is the request's estimated cost.
func (p PredictRequest) Tokens() int64 { return estimateTokens(p.Bytes, DefaultMaxTokens) }

// ParsePredictRequest checks a predict body: a JSON object with an object
// "features" (seed 000's decision inputs). Errors are *openai.RequestError.
func ParsePredictRequest(body []byte) (PredictRequest, error) {
	var raw struct {
		Features json.RawMessage `json:"features"`
	}
	if err := openai.DecodeObject(body, &raw); err != nil {
		return PredictRequest{}, err
	}
	f := bytes.TrimSpace(raw.Features)
	if len(f) == 0 || f[0] != '{' {
		return PredictRequest{}, &openai.RequestError{Field: "features", Msg: "must be a JSON object"}
	}
	return PredictRequest{Bytes: len(body)}, nil
}

// AgentRequest is a /v1/agent body:
// {"prompt":"…","max_tokens":64,"steps":3}.
type AgentRequest struct {
	Prompt string
	// MaxTokens is each sub-call's completion budget.
	MaxTokens int
	// Steps is the tool-call steps the task asks for (1 when absent).
	Steps int
	chars int
}

// SubTokens is one sub-call's estimated cost.
func (a AgentRequest) SubTokens() int64 { return estimateTokens(a.chars, a.MaxTokens) }

// costField is the field to blame for a sub-call over the per-request
// cap: the prompt when it is the larger part, else max_tokens.
func (a AgentRequest) costField() string {
	if estimateTokens(a.chars, 0) > int64(a.MaxTokens) {
		return "prompt"
	}
	return "max_tokens"
}

// ParseAgentRequest checks an agent body: a non-empty string "prompt" of
// at most maxPromptChars characters, optional 0 ≤ "max_tokens" ≤
// maxTokens (the gateway's max_tokens_limit) and optional 1 ≤ "steps" ≤
// maxSteps. Errors are *openai.RequestError.
func ParseAgentRequest(body []byte, maxPromptChars, maxSteps, maxTokens int) (AgentRequest, error) {
	var raw struct {
		Prompt    *string `json:"prompt"`
		MaxTokens *int    `json:"max_tokens"`
		Steps     *int    `json:"steps"`
	}
	if err := openai.DecodeObject(body, &raw); err != nil {
		return AgentRequest{}, err
	}
	if raw.Prompt == nil || *raw.Prompt == "" {
		return AgentRequest{}, &openai.RequestError{Field: "prompt", Msg: "must be a non-empty string"}
	}
	a := AgentRequest{Prompt: *raw.Prompt, MaxTokens: DefaultAgentMaxTokens, Steps: 1}
	a.chars = utf8.RuneCountInString(a.Prompt)
	if a.chars > maxPromptChars {
		return AgentRequest{}, &openai.RequestError{Field: "prompt", Msg: fmt.Sprintf("must be at most %d characters (agent.max_prompt_chars), got %d", maxPromptChars, a.chars)}
	}
	if raw.MaxTokens != nil {
		a.MaxTokens = *raw.MaxTokens
	}
	if err := openai.CheckMaxTokens("max_tokens", a.MaxTokens, maxTokens); err != nil {
		return AgentRequest{}, err
	}
	if raw.Steps != nil {
		a.Steps = *raw.Steps
	}
	if a.Steps < 1 || a.Steps > maxSteps {
		return AgentRequest{}, &openai.RequestError{Field: "steps", Msg: fmt.Sprintf("must be an integer in [1, %d] (agent.max_depth), got %d", maxSteps, a.Steps)}
	}
	return a, nil
}

// CompletionRequest is what the gateway reads of a legacy text completion
// request (POST /v1/completions); the body is relayed unchanged.
type CompletionRequest struct {
	Stream bool
	// MaxTokens is max_tokens (DefaultMaxTokens when unset): each
	// sequence's most.
	MaxTokens int
	// Sequences is what the model generates: best_of (≥ n) for each
	// prompt.
	Sequences int
	Prompt    openai.Prompt
	// IncludeUsage is stream_options.include_usage; HasStreamOptions
	// whether the body named stream_options at all.
	IncludeUsage, HasStreamOptions bool
}

// ParseCompletionRequest checks a completion body (openai.ParseCompletion
// with max_tokens ≤ maxTokens, the gateway's max_tokens_limit). Errors are
// *openai.RequestError.
func ParseCompletionRequest(body []byte, maxTokens int) (CompletionRequest, error) {
	c, err := openai.ParseCompletion(body, maxTokens)
	if err != nil {
		return CompletionRequest{}, err
	}
	return CompletionRequest{Stream: c.Stream, MaxTokens: c.MaxTokens, Sequences: c.Sequences(), Prompt: c.Prompt,
		IncludeUsage: c.IncludeUsage, HasStreamOptions: c.HasStreamOptions}, nil
}

// Tokens is the request's estimated cost: the prompts' estimate
// (characters / 4 plus token ids) plus MaxTokens for each sequence.
func (c CompletionRequest) Tokens() int64 { return c.Prompt.EstimatedTokens() + c.completion() }

func (c CompletionRequest) completion() int64 { return int64(c.MaxTokens) * int64(max(c.Sequences, 1)) }

// costField is the field to blame for an estimate over the per-request
// cap: the prompt when it is the larger part, else max_tokens.
func (c CompletionRequest) costField() string {
	if c.Prompt.EstimatedTokens() > c.completion() {
		return "prompt"
	}
	return "max_tokens"
}

// costParts says what the estimate is made of, for an error message.
func (c CompletionRequest) costParts() string {
	s := fmt.Sprintf("prompt ≈ %d + max_tokens %d", c.Prompt.EstimatedTokens(), c.MaxTokens)
	if c.Sequences > 1 {
		s += fmt.Sprintf(" × %d sequences (prompts × best_of or n)", c.Sequences)
	}
	return s
}

// streamReq is what relaySSE needs of a streamed completion.
func (c CompletionRequest) streamReq() streamReq {
	return streamReq{class: wire.CallCompletionSt, path: wire.PathCompletions, hasStreamOptions: c.HasStreamOptions, prompt: c.Prompt.EstimatedTokens()}
}

// EmbeddingsRequest is what the gateway reads of an embeddings request
// (POST /v1/embeddings); the body is relayed unchanged.
type EmbeddingsRequest struct {
	Input openai.Prompt
}

// ParseEmbeddingsRequest checks an embeddings body (openai.ParseEmbeddings).
// Errors are *openai.RequestError.
func ParseEmbeddingsRequest(body []byte) (EmbeddingsRequest, error) {
	e, err := openai.ParseEmbeddings(body)
	if err != nil {
		return EmbeddingsRequest{}, err
	}
	return EmbeddingsRequest{Input: e.Input}, nil
}

// Tokens is the request's estimated cost: its inputs' tokens only, since
// an embedding generates none.
func (e EmbeddingsRequest) Tokens() int64 { return e.Input.EstimatedTokens() }
