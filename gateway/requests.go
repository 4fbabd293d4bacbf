package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/levee-lab/levee/internal/openai"
)

// Request limits of the model routes.
const (
	// DefaultMaxTokens is the completion budget assumed when a request
	// names no max_tokens.
	DefaultMaxTokens = openai.DefaultMaxTokens
	// MaxMaxTokens bounds max_tokens.
	MaxMaxTokens = 32768
	// DefaultAgentMaxTokens is one agent sub-call's completion budget.
	DefaultAgentMaxTokens = 64
)

// ChatRequest is what the gateway reads of an OpenAI chat completion
// request; the body itself is relayed upstream unchanged.
type ChatRequest struct {
	Stream      bool
	MaxTokens   int
	PromptChars int // characters of all message text
	Messages    int
}

// Tokens is the request's estimated cost.
func (c ChatRequest) Tokens() int64 { return estimateTokens(c.PromptChars, c.MaxTokens) }

// ParseChatRequest checks a chat completion body (openai.ParseChat with
// max_tokens ≤ MaxMaxTokens, DefaultMaxTokens when unset) and measures its
// prompt. Errors are *openai.RequestError.
func ParseChatRequest(body []byte) (ChatRequest, error) {
	c, err := openai.ParseChat(body, MaxMaxTokens)
	if err != nil {
		return ChatRequest{}, err
	}
	req := ChatRequest{Stream: c.Stream, MaxTokens: c.MaxTokens, Messages: len(c.Messages)}
	if !c.MaxTokensSet {
		req.MaxTokens = DefaultMaxTokens
	}
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

// AgentRequest is a /v1/agent body: {"prompt":"…","max_tokens":64}.
type AgentRequest struct {
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens"`
	chars     int
}

// SubTokens is one sub-call's estimated cost.
func (a AgentRequest) SubTokens() int64 { return estimateTokens(a.chars, a.MaxTokens) }

// ParseAgentRequest checks an agent body: a non-empty string "prompt" and
// optional 0 ≤ "max_tokens" ≤ MaxMaxTokens. Errors are *openai.RequestError.
func ParseAgentRequest(body []byte) (AgentRequest, error) {
	var raw struct {
		Prompt    *string `json:"prompt"`
		MaxTokens *int    `json:"max_tokens"`
	}
	if err := openai.DecodeObject(body, &raw); err != nil {
		return AgentRequest{}, err
	}
	if raw.Prompt == nil || *raw.Prompt == "" {
		return AgentRequest{}, &openai.RequestError{Field: "prompt", Msg: "must be a non-empty string"}
	}
	a := AgentRequest{Prompt: *raw.Prompt, MaxTokens: DefaultAgentMaxTokens}
	if raw.MaxTokens != nil {
		a.MaxTokens = *raw.MaxTokens
	}
	if a.MaxTokens < 0 || a.MaxTokens > MaxMaxTokens {
		return AgentRequest{}, &openai.RequestError{Field: "max_tokens", Msg: fmt.Sprintf("must be in [0, %d], got %d", MaxMaxTokens, a.MaxTokens)}
	}
	a.chars = utf8.RuneCountInString(a.Prompt)
	return a, nil
}
