package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DefaultMaxTokens is the completion length assumed when a chat request
// names neither max_tokens nor max_completion_tokens.
const DefaultMaxTokens = 16

// Chat is what Levee reads of a chat completion request.
type Chat struct {
	Model    string
	Messages []Message // at least one
	Stream   bool
	// MaxTokens is max_tokens, or max_completion_tokens when that is set;
	// 0 when neither is (MaxTokensSet is false then).
	MaxTokens    int
	MaxTokensSet bool
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
// boolean "stream" and optional 0 ≤ "max_tokens" ≤ maxTokens
// ("max_completion_tokens" wins when both are set). Errors are
// *RequestError.
func ParseChat(body []byte, maxTokens int) (Chat, error) {
	var raw struct {
		Model     *string           `json:"model"`
		Messages  []json.RawMessage `json:"messages"`
		Stream    *bool             `json:"stream"`
		MaxTokens *int              `json:"max_tokens"`
		MaxCompl  *int              `json:"max_completion_tokens"`
	}
	if err := DecodeObject(body, &raw); err != nil {
		return Chat{}, err
	}
	var c Chat
	if raw.Model != nil {
		c.Model = *raw.Model
	}
	if raw.Stream != nil {
		c.Stream = *raw.Stream
	}
	field := "max_tokens"
	if raw.MaxTokens != nil {
		c.MaxTokens, c.MaxTokensSet = *raw.MaxTokens, true
	}
	if raw.MaxCompl != nil {
		c.MaxTokens, c.MaxTokensSet, field = *raw.MaxCompl, true, "max_completion_tokens"
	}
	if c.MaxTokens < 0 || c.MaxTokens > maxTokens {
		return Chat{}, &RequestError{field, fmt.Sprintf("must be in [0, %d], got %d", maxTokens, c.MaxTokens)}
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
	const badContent = "must be a string or an array of text parts"
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
