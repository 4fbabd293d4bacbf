package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Completion limits shared by every Levee server, so a request the gateway
// accepts is one the fake model accepts too.
const (
	// DefaultMaxTokens is the completion length assumed when a chat
	// request names neither max_tokens nor max_completion_tokens.
	DefaultMaxTokens = 16
	// MaxTokens is the default bound of max_tokens and
	// max_completion_tokens (and an agent request's max_tokens): the fake
	// model's, and the gateway's unless its max_tokens_limit says
	// otherwise (ParseChat takes the bound).
	MaxTokens = 32768
	// MaxTokensCeiling is the largest bound of max_tokens a server may be
	// configured with (the gateway's max_tokens_limit, the fake model's
	// --max-tokens): 16,777,216, so × n 128 stays far inside int64.
	MaxTokensCeiling = 1 << 24
	// MaxChoices bounds n, the choices one request asks for (OpenAI's own
	// bound).
	MaxChoices = 128
)

// Chat is what Levee reads of a chat completion request.
type Chat struct {
	Model    string
	Messages []Message // at least one
	Stream   bool
	// MaxTokens is max_tokens, or max_completion_tokens when that is set;
	// 0 when neither is (MaxTokensSet is false then).
	MaxTokens    int
	MaxTokensSet bool
	// N is n, the choices to generate (each up to MaxTokens long): 1 when
	// absent or null.
	N int
	// IncludeUsage is stream_options.include_usage: a streamed answer ends
	// with a chunk carrying usage and no choices.
	IncludeUsage bool
	// HasStreamOptions reports whether the body named stream_options at
	// all, null included: a relay must not add a second one.
	HasStreamOptions bool
}

// Message is one chat message. Content is its text: the string, or the
// concatenated text of an array of parts ({"type":"text","text":"…"});
// empty for a null or absent content (assistant tool calls).
type Message struct {
	Role    string
	Content string
}

// ParseChat checks a chat completion body: a JSON object with a non-empty
// "messages" array of objects, each with a non-empty string "role" and a
// "content" that is a string, an array of text parts or null; an optional
// boolean "stream", an optional object (or null) "stream_options" with a
// boolean "include_usage", and optional 0 ≤ "max_tokens" ≤ maxTokens
// ("max_completion_tokens" wins when both are set). Errors are
// *RequestError.
func ParseChat(body []byte, maxTokens int) (Chat, error) {
	var raw struct {
		Model         *string           `json:"model"`
		Messages      []json.RawMessage `json:"messages"`
		Stream        *bool             `json:"stream"`
		StreamOptions json.RawMessage   `json:"stream_options"`
		MaxTokens     *int              `json:"max_tokens"`
		MaxCompl      *int              `json:"max_completion_tokens"`
		N             *int              `json:"n"`
	}
	err := DecodeObject(body, &raw)
	if err != nil {
		return Chat{}, err
	}
	var c Chat
	if raw.Model != nil {
		c.Model = *raw.Model
	}
	if raw.Stream != nil {
		c.Stream = *raw.Stream
	}
	if raw.StreamOptions != nil {
		c.HasStreamOptions = true
		if c.IncludeUsage, err = parseStreamOptions(raw.StreamOptions); err != nil {
			return Chat{}, err
		}
	}
	field := "max_tokens"
	if raw.MaxTokens != nil {
		c.MaxTokens, c.MaxTokensSet = *raw.MaxTokens, true
	}
	if raw.MaxCompl != nil {
		c.MaxTokens, c.MaxTokensSet, field = *raw.MaxCompl, true, "max_completion_tokens"
	}
	if err := CheckMaxTokens(field, c.MaxTokens, maxTokens); err != nil {
		return Chat{}, err
	}
	c.N = 1
	if raw.N != nil {
		c.N = *raw.N
	}
	if c.N < 1 || c.N > MaxChoices {
		return Chat{}, &RequestError{"n", fmt.Sprintf("must be an integer in [1, %d], got %d", MaxChoices, c.N)}
	}
	if len(raw.Messages) == 0 {
		return Chat{}, &RequestError{"messages", "must be a non-empty array"}
	}
	c.Messages = make([]Message, len(raw.Messages))
	for i, m := range raw.Messages {
		msg, suffix, problem := parseMessage(m)
		if problem != "" {
			return Chat{}, &RequestError{fmt.Sprintf("messages[%d]%s", i, suffix), problem}
		}
		c.Messages[i] = msg
	}
	return c, nil
}

// CheckMaxTokens checks a completion length v of the field named field
// against 0 ≤ v ≤ limit.
func CheckMaxTokens(field string, v, limit int) error {
	if v < 0 || v > limit {
		return &RequestError{field, fmt.Sprintf("must be an integer in [0, %d], got %d", limit, v)}
	}
	return nil
}

// Completion is the completion length this request asks for: MaxTokens,
// or DefaultMaxTokens when neither field was set.
func (c Chat) Completion() int {
	if c.MaxTokensSet {
		return c.MaxTokens
	}
	return DefaultMaxTokens
}

// parseMessage reads one message, or returns the field suffix (".role",
// ".content", or "" for the message itself) and what is wrong with it.
func parseMessage(m json.RawMessage) (msg Message, field, problem string) {
	var raw struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(m, &raw); err != nil {
		return Message{}, "", "must be an object with a string role"
	}
	if raw.Role == nil || *raw.Role == "" {
		return Message{}, ".role", "must be a non-empty string"
	}
	msg.Role = *raw.Role
	const badContent = "must be a string, an array of text parts or null"
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		if json.Unmarshal(c, &msg.Content) != nil {
			return Message{}, ".content", badContent
		}
	case c[0] == '[':
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(c, &parts) != nil {
			return Message{}, ".content", badContent
		}
		for _, p := range parts {
			msg.Content += p.Text
		}
	default:
		return Message{}, ".content", badContent
	}
	return msg, "", ""
}

// parseStreamOptions reads the value of "stream_options": null, or an
// object with an optional boolean "include_usage".
func parseStreamOptions(v json.RawMessage) (includeUsage bool, err error) {
	if string(v) == "null" {
		return false, nil
	}
	var so struct {
		IncludeUsage *bool `json:"include_usage"`
	}
	if err := json.Unmarshal(v, &so); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return false, &RequestError{"stream_options", "must be an object"}
		}
		re := TypeError(te)
		re.Field = strings.TrimSuffix("stream_options."+re.Field, ".")
		return false, re
	}
	return so.IncludeUsage != nil && *so.IncludeUsage, nil
}
