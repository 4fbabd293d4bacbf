package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
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
	// Stop is stop: the sequences that end the answer where they first
	// appear (not included in it); nil when absent, null or [].
	Stop []string
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
// boolean "include_usage", an optional "stop" (ParseStop), and optional
// 0 ≤ "max_tokens" ≤ maxTokens
// ("max_completion_tokens" wins when both are set). Errors are
// *RequestError.
func ParseChat(body []byte, maxTokens int) (Chat, error) {
	// The messages are decoded with the rest of the body when they can be:
	// a bad body is decoded again, message by message, to name what is
	// wrong, and so is a body with "messages" twice (where decoding into
	// the same elements would merge them; see onlyKey).
	var fast chatFields[messageFields]
	if DecodeObject(body, &fast) == nil && onlyKey(body, "messages") {
		c, err := fast.chat(maxTokens, len(fast.Messages), func(i int) (messageFields, bool) { return fast.Messages[i], true })
		if err == nil {
			return c, nil
		}
	}
	var raw chatFields[json.RawMessage]
	if err := DecodeObject(body, &raw); err != nil {
		return Chat{}, err
	}
	return raw.chat(maxTokens, len(raw.Messages), func(i int) (messageFields, bool) {
		var m messageFields
		return m, json.Unmarshal(raw.Messages[i], &m) == nil
	})
}

// chatFields are the fields of a chat body, its messages decoded as M.
type chatFields[M any] struct {
	Model         *string         `json:"model"`
	Messages      []M             `json:"messages"`
	Stream        *bool           `json:"stream"`
	StreamOptions json.RawMessage `json:"stream_options"`
	MaxTokens     *int            `json:"max_tokens"`
	MaxCompl      *int            `json:"max_completion_tokens"`
	N             *int            `json:"n"`
	Stop          json.RawMessage `json:"stop"`
}

// messageFields are the fields of a chat message.
type messageFields struct {
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
}

// chat checks the fields of a decoded body and its n messages; message
// returns the i-th message's fields, false when it is not an object.
func (raw chatFields[M]) chat(maxTokens, n int, message func(i int) (messageFields, bool)) (Chat, error) {
	var c Chat
	var err error
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
	if c.Stop, err = ParseStop(raw.Stop); err != nil {
		return Chat{}, err
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
	if n == 0 {
		return Chat{}, &RequestError{"messages", "must be a non-empty array"}
	}
	c.Messages = make([]Message, n)
	for i := range n {
		m, ok := message(i)
		if !ok {
			return Chat{}, &RequestError{fmt.Sprintf("messages[%d]", i), "must be an object with a string role"}
		}
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

// parseMessage checks one message's fields, or returns the field suffix
// (".role", ".content") and what is wrong with it.
func parseMessage(raw messageFields) (msg Message, field, problem string) {
	if raw.Role == nil || *raw.Role == "" {
		return Message{}, ".role", "must be a non-empty string"
	}
	msg.Role = *raw.Role
	const badContent = "must be a string, an array of text parts or null"
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		if s, ok := plainString(c); ok {
			msg.Content = s
		} else if json.Unmarshal(c, &msg.Content) != nil {
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

// plainString returns the text of a JSON string (a decoded value, quotes
// included) that needs no unquoting: no escape, valid UTF-8 — what
// encoding/json would decode it to, without its reflection.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') >= 0 || bytes.IndexByte(in, '"') >= 0 || !utf8.Valid(in) {
		return "", false
	}
	for _, b := range in {
		if b < ' ' {
			return "", false
		}
	}
	return string(in), true
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

// ParseStop reads the value of "stop" (chat and text completions): absent
// or null, a string, or an array of strings, each non-empty — vLLM
// refuses an empty one ("stop cannot contain an empty string"), and
// takes any number of them, so Levee does not enforce OpenAI's four. It
// returns nil for absent, null and []. Errors are *RequestError naming
// "stop" or the item ("stop[1]").
func ParseStop(v json.RawMessage) ([]string, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	const want = "must be a non-empty string, an array of non-empty strings or null"
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" {
			return nil, &RequestError{"stop", want}
		}
		return []string{s}, nil
	}
	var items []json.RawMessage
	if v[0] != '[' || json.Unmarshal(v, &items) != nil {
		return nil, &RequestError{"stop", want}
	}
	if len(items) == 0 {
		return nil, nil
	}
	stop := make([]string, len(items))
	for i, it := range items {
		if it = bytes.TrimSpace(it); len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &stop[i]) != nil || stop[i] == "" {
			return nil, &RequestError{fmt.Sprintf("stop[%d]", i), "must be a non-empty string"}
		}
	}
	return stop, nil
}
