package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The reference: ParseChat as it was before it decoded the messages with
// the body (each message decoded on its own, its content with
// encoding/json), on the reference DecodeObject.
func parseChatReference(body []byte, maxTokens int) (Chat, error) {
	var raw struct {
		Model         *string           `json:"model"`
		Messages      []json.RawMessage `json:"messages"`
		Stream        *bool             `json:"stream"`
		StreamOptions json.RawMessage   `json:"stream_options"`
		MaxTokens     *int              `json:"max_tokens"`
		MaxCompl      *int              `json:"max_completion_tokens"`
		N             *int              `json:"n"`
		Stop          json.RawMessage   `json:"stop"`
	}
	err := decodeObjectReference(body, &raw)
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
	if len(raw.Messages) == 0 {
		return Chat{}, &RequestError{"messages", "must be a non-empty array"}
	}
	c.Messages = make([]Message, len(raw.Messages))
	for i, m := range raw.Messages {
		msg, suffix, problem := parseMessageReference(m)
		if problem != "" {
			return Chat{}, &RequestError{fmt.Sprintf("messages[%d]%s", i, suffix), problem}
		}
		c.Messages[i] = msg
	}
	return c, nil
}

func parseMessageReference(m json.RawMessage) (msg Message, field, problem string) {
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

// chatCases are chat bodies the gateway and the fake model see, and the
// shapes the fast decoding must leave to the reference.
var chatCases = []string{
	`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi é ✓"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":null}]}`,
	`{"messages":[{"role":"user","content":"line\nbreak \"quoted\" \u00e9 \ud83d\ude00"}],"n":3,"max_completion_tokens":5}`,
	"{\"messages\":[{\"role\":\"user\",\"content\":\"bad utf8 \xff\xfe\"}]}",
	`{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"assistant"}]}`,
	`{"messages":[{"role":"user","content":"a"}],"MESSAGES":[{"role":"b"}]}`,
	`{"messages":[{"role":"user","content":"a"}],"m\u0065ssages":[{"role":"b"}]}`,
	`{"messages":[{"role":"user","content":"a","role":""}]}`,
	`{"Messages":[{"ROLE":"user","Content":"a"}],"Stream":true,"N":2}`,
	`{"messages":[null]}`, `{"messages":["x"]}`, `{"messages":[{"role":1}]}`, `{"messages":[{"role":"u","content":1}]}`,
	`{"messages":[{"role":"u","content":[1]}]}`, `{"messages":[{"role":"u","content":{}}]}`, `{"messages":[]}`, `{"messages":null}`,
	`{"messages":"x"}`, `{"messages":[{"role":"u"}],"max_tokens":1e30}`, `{"messages":[{"role":"u"}],"stream_options":3}`,
	`{"messages":[{"role":"u"}],"stream_options":{"include_usage":"yes"}}`, `{"messages":[{"role":"u"}],"n":0}`,
	`{"messages":[{"role":"u"}],"max_tokens":-1}`, `{"messages":[{"role":"u"}],"stream":"true"}`, `[]`, ``, `{"a":1} x`, `{`,
	`{"messages":[{"role":"u","content":"x"},{"role":"u","content":"y"}],"messages":[{"role":"v"}]}`,
	`{"messages":[{"role":"u"}],"stop":"x"}`, `{"messages":[{"role":"u"}],"stop":["a","b"]}`, `{"messages":[{"role":"u"}],"stop":[]}`,
	`{"messages":[{"role":"u"}],"stop":null}`, `{"messages":[{"role":"u"}],"stop":""}`, `{"messages":[{"role":"u"}],"stop":["a",""]}`,
	`{"messages":[{"role":"u"}],"stop":[1]}`, `{"messages":[{"role":"u"}],"stop":[null]}`, `{"messages":[{"role":"u"}],"stop":5}`,
}

// TestParseChatMatchesReference: ParseChat answers every case as the
// reference does, error messages included.
func TestParseChatMatchesReference(t *testing.T) {
	for _, body := range chatCases {
		checkParseChat(t, []byte(body))
	}
}

func checkParseChat(t *testing.T, body []byte) {
	t.Helper()
	got, gerr := ParseChat(body, MaxTokens)
	want, werr := parseChatReference(body, MaxTokens)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\n got %+v, %v\nwant %+v, %v", body, got, gerr, want, werr)
	}
	var re *RequestError
	if gerr != nil && !errors.As(gerr, &re) {
		t.Errorf("%q: error %v is not a *RequestError", body, gerr)
	}
}

// FuzzParseChatMatchesReference: on any body ParseChat answers as the
// reference does.
func FuzzParseChatMatchesReference(f *testing.F) {
	for _, c := range chatCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkParseChat(t, body)
	})
}

// BenchmarkParseChat: a chat body of the usual shape (a system prompt, a
// question of about 500 bytes), read by ParseChat and by the reference.
func BenchmarkParseChat(b *testing.B) {
	body := []byte(`{"model":"llama-3.1-8b-instruct","messages":[` +
		`{"role":"system","content":"You are a helpful assistant. Answer briefly and cite the documents you were given when you use them."},` +
		`{"role":"user","content":"` + strings.Repeat("What limits the throughput of a model server under load? ", 8) + `"}],` +
		`"max_tokens":256,"temperature":0.2}`)
	for _, p := range []struct {
		name  string
		parse func([]byte, int) (Chat, error)
	}{{"current", ParseChat}, {"reference", parseChatReference}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.parse(body, MaxTokens); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
