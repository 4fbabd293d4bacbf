package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/levee-lab/levee/internal/openai"
)

// Request limits.
const (
	// MaxBodyBytes bounds a request body; larger bodies are 413.
	MaxBodyBytes = 1 << 20
	// DefaultCompletionTokens is the completion length when the request
	// names no max_tokens.
	DefaultCompletionTokens = openai.DefaultMaxTokens
	// MaxCompletionTokens bounds max_tokens by default: the one limit the
	// gateway applies too (openai.MaxTokens). WithMaxTokens (the
	// --max-tokens flag) changes a node's.
	MaxCompletionTokens = openai.MaxTokens
)

// CheckMaxTokensBound checks a node's bound of max_tokens (WithMaxTokens,
// --max-tokens, an experiment's nodes.max_tokens):
// 1..openai.MaxTokensCeiling, the range of the gateway's max_tokens_limit.
func CheckMaxTokensBound(n int) error {
	if n < 1 || n > openai.MaxTokensCeiling {
		return fmt.Errorf("max tokens %d: want 1 to %d", n, openai.MaxTokensCeiling)
	}
	return nil
}

// ChatRequest is the part of an OpenAI chat completion request the fake
// model uses. Unknown fields are ignored, as OpenAI-compatible servers do.
type ChatRequest struct {
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
	// MaxTokens is max_tokens, or max_completion_tokens when that is set,
	// or DefaultCompletionTokens when neither is: the answer's cap.
	MaxTokens int `json:"max_tokens"`
	// N is n, the choices to generate (1 when absent): each is an answer
	// of its own, costing service time and counted in usage.
	N int `json:"n"`
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool `json:"-"`
	// Stop is stop: sequences that end the answer where they appear.
	Stop []string `json:"-"`
}

// ChatMessage is one message. Content is a string or an array of parts
// ({"type":"text","text":"…"}); only the text counts.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"-"`
}

// ParseChatRequest parses and checks a chat completion body
// (openai.ParseChat: max_tokens ≤ maxTokens, the node's bound). Errors are
// *openai.RequestError.
func ParseChatRequest(body []byte, maxTokens int) (ChatRequest, error) {
	c, err := openai.ParseChat(body, maxTokens)
	if err != nil {
		return ChatRequest{}, err
	}
	req := ChatRequest{Model: c.Model, Stream: c.Stream, MaxTokens: c.Completion(), N: c.N, IncludeUsage: c.IncludeUsage,
		Stop: c.Stop, Messages: make([]ChatMessage, len(c.Messages))}
	for i, m := range c.Messages {
		req.Messages[i] = ChatMessage(m)
	}
	return req, nil
}

// PromptTokens estimates the prompt's tokens: one per 4 characters of
// message content, at least 1.
func (r ChatRequest) PromptTokens() int {
	n := 0
	for _, m := range r.Messages {
		n += utf8.RuneCountInString(m.Content)
	}
	return max(1, (n+3)/4)
}

// Completion is the answer to r from a model whose answers are
// answerTokens long (0: endless): its length and finish_reason, "length"
// when max_tokens cut it.
func (r ChatRequest) Completion(answerTokens int) (tokens int, finish string) {
	if answerTokens > 0 && answerTokens <= r.MaxTokens {
		return answerTokens, FinishStop
	}
	return r.MaxTokens, FinishLength
}

// OpenAI finish reasons.
const (
	FinishStop   = "stop"   // the answer ended on its own
	FinishLength = "length" // max_tokens cut the answer
)

// PredictRequest is a /v1/predict body: any JSON object (its features are
// not inspected) or an empty body.
type PredictRequest struct {
	// Bytes is the body size, a stand-in for the work the features cost.
	Bytes int
}

// ParsePredictRequest accepts an empty body or a JSON object.
func ParsePredictRequest(body []byte) (PredictRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return PredictRequest{}, nil
	}
	var obj map[string]json.RawMessage
	if err := openai.DecodeObject(body, &obj); err != nil {
		return PredictRequest{}, err
	}
	return PredictRequest{Bytes: len(body)}, nil
}
