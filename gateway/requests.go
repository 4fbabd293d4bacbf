package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Request limits of the model routes.
const (
	// DefaultMaxTokens is the completion budget assumed when a request
	// names no max_tokens (the fake model's default too).
	DefaultMaxTokens = 16
	// MaxMaxTokens bounds max_tokens.
	MaxMaxTokens = 32768
	// DefaultAgentMaxTokens is one agent sub-call's completion budget.
	DefaultAgentMaxTokens = 64
)

// RequestError is a bad request body (400); Field names the JSON field to
// blame ("messages[2].content"), "" when the body as a whole is wrong.
type RequestError struct {
	Field string
	Msg   string
}

func (e *RequestError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

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

// ParseChatRequest checks a chat completion body: a JSON object with a
// non-empty "messages" array of objects with a non-empty string "role"
// and a "content" that is a string, an array of text parts or null;
// optional "stream" bool and 0 ≤ "max_tokens" ≤ MaxMaxTokens
// ("max_completion_tokens" is an alias). Errors are *RequestError.
func ParseChatRequest(body []byte) (ChatRequest, error) {
	var raw struct {
		Messages  []json.RawMessage `json:"messages"`
		Stream    *bool             `json:"stream"`
		MaxTokens *int              `json:"max_tokens"`
		MaxCompl  *int              `json:"max_completion_tokens"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return ChatRequest{}, err
	}
	req := ChatRequest{MaxTokens: DefaultMaxTokens}
	if raw.Stream != nil {
		req.Stream = *raw.Stream
	}
	field := "max_tokens"
	if raw.MaxTokens != nil {
		req.MaxTokens = *raw.MaxTokens
	}
	if raw.MaxCompl != nil {
		req.MaxTokens, field = *raw.MaxCompl, "max_completion_tokens"
	}
	if req.MaxTokens < 0 || req.MaxTokens > MaxMaxTokens {
		return ChatRequest{}, &RequestError{field, fmt.Sprintf("must be in [0, %d], got %d", MaxMaxTokens, req.MaxTokens)}
	}
	if len(raw.Messages) == 0 {
		return ChatRequest{}, &RequestError{"messages", "must be a non-empty array"}
	}
	req.Messages = len(raw.Messages)
	for i, m := range raw.Messages {
		n, f, msg := messageChars(m)
		if msg != "" {
			return ChatRequest{}, &RequestError{fmt.Sprintf("messages[%d]%s", i, f), msg}
		}
		req.PromptChars += n
	}
	return req, nil
}

// messageChars returns the text length of one message, or the field
// suffix and message of what is wrong with it.
func messageChars(m json.RawMessage) (n int, field, msg string) {
	var raw struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(m, &raw); err != nil {
		return 0, "", "must be an object with a string role"
	}
	if raw.Role == nil || *raw.Role == "" {
		return 0, ".role", "must be a non-empty string"
	}
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
		return 0, "", ""
	case c[0] == '"':
		var s string
		if json.Unmarshal(c, &s) != nil {
			return 0, ".content", "must be a string or an array of text parts"
		}
		return utf8.RuneCountInString(s), "", ""
	case c[0] == '[':
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(c, &parts) != nil {
			return 0, ".content", "must be a string or an array of text parts"
		}
		for _, p := range parts {
			n += utf8.RuneCountInString(p.Text)
		}
		return n, "", ""
	}
	return 0, ".content", "must be a string or an array of text parts"
}

// PredictRequest is what the gateway reads of a /v1/predict body.
type PredictRequest struct {
	Bytes int // body size: the features' cost stand-in
}

// Tokens is the request's estimated cost.
func (p PredictRequest) Tokens() int64 { return estimateTokens(p.Bytes, DefaultMaxTokens) }

// ParsePredictRequest checks a predict body: a JSON object with an object
// "features" (seed 000's decision inputs). Errors are *RequestError.
func ParsePredictRequest(body []byte) (PredictRequest, error) {
	var raw struct {
		Features json.RawMessage `json:"features"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return PredictRequest{}, err
	}
	f := bytes.TrimSpace(raw.Features)
	if len(f) == 0 || f[0] != '{' {
		return PredictRequest{}, &RequestError{"features", "must be a JSON object"}
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
// optional 0 ≤ "max_tokens" ≤ MaxMaxTokens. Errors are *RequestError.
func ParseAgentRequest(body []byte) (AgentRequest, error) {
	var raw struct {
		Prompt    *string `json:"prompt"`
		MaxTokens *int    `json:"max_tokens"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return AgentRequest{}, err
	}
	if raw.Prompt == nil || *raw.Prompt == "" {
		return AgentRequest{}, &RequestError{"prompt", "must be a non-empty string"}
	}
	a := AgentRequest{Prompt: *raw.Prompt, MaxTokens: DefaultAgentMaxTokens}
	if raw.MaxTokens != nil {
		a.MaxTokens = *raw.MaxTokens
	}
	if a.MaxTokens < 0 || a.MaxTokens > MaxMaxTokens {
		return AgentRequest{}, &RequestError{"max_tokens", fmt.Sprintf("must be in [0, %d], got %d", MaxMaxTokens, a.MaxTokens)}
	}
	a.chars = utf8.RuneCountInString(a.Prompt)
	return a, nil
}

// decodeObject decodes exactly one JSON object from body into v.
func decodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return &RequestError{"", "empty body: want a JSON object"}
	}
	if b[0] != '{' {
		return &RequestError{"", "body must be a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &RequestError{te.Field, fmt.Sprintf("wrong type: got JSON %s, want %s", te.Value, te.Type)}
		}
		return &RequestError{"", "malformed JSON: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &RequestError{"", "trailing data after the JSON object"}
	}
	return nil
}
