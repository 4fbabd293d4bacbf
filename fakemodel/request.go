package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Request limits.
const (
	// MaxBodyBytes bounds a request body; larger bodies are 413.
	MaxBodyBytes = 1 << 20
	// DefaultCompletionTokens is the completion length when the request
	// names no max_tokens.
	DefaultCompletionTokens = 16
	// MaxCompletionTokens bounds max_tokens, so one request cannot hold a
	// slot (or a stream) for ever.
	MaxCompletionTokens = 4096
)

// ChatRequest is the part of an OpenAI chat completion request the fake
// model uses. Unknown fields are ignored, as OpenAI-compatible servers do.
type ChatRequest struct {
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
	// MaxTokens is max_tokens, or max_completion_tokens when that is set.
	MaxTokens int `json:"max_tokens"`
}

// ChatMessage is one message. Content is a string or an array of parts
// ({"type":"text","text":"…"}); only the text counts.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"-"`
}

// RequestError is a request the fake model cannot serve (400).
type RequestError struct {
	Field string // JSON name of the field to blame, "" when none
	Msg   string
}

func (e *RequestError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// ParseChatRequest parses and checks a chat completion body: a JSON object
// with a non-empty messages array whose items have a string role and a
// string (or text-part array) content, and 0 ≤ max_tokens ≤
// MaxCompletionTokens. Errors are *RequestError.
func ParseChatRequest(body []byte) (ChatRequest, error) {
	var raw struct {
		Model     *string           `json:"model"`
		Messages  []json.RawMessage `json:"messages"`
		Stream    *bool             `json:"stream"`
		MaxTokens *int              `json:"max_tokens"`
		MaxCompl  *int              `json:"max_completion_tokens"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return ChatRequest{}, err
	}
	var req ChatRequest
	if raw.Model != nil {
		req.Model = *raw.Model
	}
	if raw.Stream != nil {
		req.Stream = *raw.Stream
	}
	if raw.MaxTokens != nil {
		req.MaxTokens = *raw.MaxTokens
	}
	field := "max_tokens"
	if raw.MaxCompl != nil {
		req.MaxTokens, field = *raw.MaxCompl, "max_completion_tokens"
	}
	if req.MaxTokens < 0 || req.MaxTokens > MaxCompletionTokens {
		return ChatRequest{}, &RequestError{Field: field, Msg: fmt.Sprintf("must be in [0, %d], got %d", MaxCompletionTokens, req.MaxTokens)}
	}
	if len(raw.Messages) == 0 {
		return ChatRequest{}, &RequestError{Field: "messages", Msg: "must be a non-empty array"}
	}
	req.Messages = make([]ChatMessage, 0, len(raw.Messages))
	for i, m := range raw.Messages {
		msg, err := parseMessage(m)
		if err != nil {
			return ChatRequest{}, &RequestError{Field: fmt.Sprintf("messages[%d].%s", i, err.Field), Msg: err.Msg}
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

func parseMessage(m json.RawMessage) (ChatMessage, *RequestError) {
	var raw struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(m, &raw); err != nil {
		return ChatMessage{}, &RequestError{Field: "role", Msg: "message must be an object with a string role"}
	}
	if raw.Role == nil || *raw.Role == "" {
		return ChatMessage{}, &RequestError{Field: "role", Msg: "must be a non-empty string"}
	}
	msg := ChatMessage{Role: *raw.Role}
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
		// Assistant tool-call messages may have no content.
	case c[0] == '"':
		if err := json.Unmarshal(c, &msg.Content); err != nil {
			return ChatMessage{}, &RequestError{Field: "content", Msg: "must be a string or an array of text parts"}
		}
	case c[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c, &parts); err != nil {
			return ChatMessage{}, &RequestError{Field: "content", Msg: "must be a string or an array of text parts"}
		}
		for _, p := range parts {
			msg.Content += p.Text
		}
	default:
		return ChatMessage{}, &RequestError{Field: "content", Msg: "must be a string or an array of text parts"}
	}
	return msg, nil
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

// CompletionTokens is MaxTokens, or DefaultCompletionTokens when unset.
func (r ChatRequest) CompletionTokens() int {
	if r.MaxTokens > 0 {
		return r.MaxTokens
	}
	return DefaultCompletionTokens
}

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
	if err := decodeObject(body, &obj); err != nil {
		return PredictRequest{}, err
	}
	return PredictRequest{Bytes: len(body)}, nil
}

// decodeObject decodes exactly one JSON object from body into v.
func decodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return &RequestError{Msg: "empty body: want a JSON object"}
	}
	if b[0] != '{' {
		return &RequestError{Msg: "body must be a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &RequestError{Field: te.Field, Msg: fmt.Sprintf("wrong type: got JSON %s, want %s", te.Value, te.Type)}
		}
		return &RequestError{Msg: "malformed JSON: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &RequestError{Msg: "trailing data after the JSON object"}
	}
	return nil
}
