package openai

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		name, body, field string
		ok                bool
	}{
		{"object", `{"a":1,"unknown":true}`, "", true},
		{"surrounding space", " \n{\"a\":2}\n ", "", true},
		{"empty", ``, "", false},
		{"blank", "  \n", "", false},
		{"array", `[1]`, "", false},
		{"malformed", `{"a":`, "", false},
		{"wrong type names the field", `{"a":"x"}`, "a", false},
		{"trailing data", `{"a":1} {"a":2}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct {
				A int `json:"a"`
			}
			err := DecodeObject([]byte(tt.body), &v)
			if tt.ok {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				return
			}
			var re *RequestError
			if !errors.As(err, &re) || re.Field != tt.field || re.Msg == "" {
				t.Fatalf("err %#v, want a *RequestError on field %q", err, tt.field)
			}
		})
	}
}

func TestParseChat(t *testing.T) {
	ok := []struct {
		name, body string
		want       Chat
	}{
		{"minimal", `{"messages":[{"role":"user","content":"hi"}]}`,
			Chat{N: 1, Messages: []Message{{"user", "hi"}}}},
		{"everything", `{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"system","content":"a"},{"role":"user","content":[{"type":"text","text":"b"},{"type":"text","text":"c"}]},{"role":"assistant","content":null}]}`,
			Chat{N: 1, Model: "m", Stream: true, MaxTokens: 8, MaxTokensSet: true, Messages: []Message{{"system", "a"}, {"user", "bc"}, {"assistant", ""}}}},
		{"include_usage", `{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"u"}]}`,
			Chat{N: 1, Stream: true, IncludeUsage: true, HasStreamOptions: true, Messages: []Message{{"u", ""}}}},
		{"empty stream_options", `{"stream_options":{},"messages":[{"role":"u"}]}`,
			Chat{N: 1, HasStreamOptions: true, Messages: []Message{{"u", ""}}}},
		{"null stream_options is named", `{"stream_options":null,"messages":[{"role":"u"}]}`,
			Chat{N: 1, HasStreamOptions: true, Messages: []Message{{"u", ""}}}},
		{"max_completion_tokens wins", `{"max_tokens":8,"max_completion_tokens":3,"messages":[{"role":"u"}]}`,
			Chat{N: 1, MaxTokens: 3, MaxTokensSet: true, Messages: []Message{{"u", ""}}}},
		{"n", `{"n":4,"messages":[{"role":"u"}]}`, Chat{N: 4, Messages: []Message{{"u", ""}}}},
		{"null n", `{"n":null,"messages":[{"role":"u"}]}`, Chat{N: 1, Messages: []Message{{"u", ""}}}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseChat([]byte(tt.body), MaxTokens)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseChat = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	bad := []struct{ name, body, field string }{
		{"not an object", `[]`, ""},
		{"no messages", `{}`, "messages"},
		{"empty messages", `{"messages":[]}`, "messages"},
		{"message not an object", `{"messages":[3]}`, "messages[0]"},
		{"no role", `{"messages":[{"content":"x"}]}`, "messages[0].role"},
		{"empty role", `{"messages":[{"role":""}]}`, "messages[0].role"},
		{"content number", `{"messages":[{"role":"u","content":"a"},{"role":"u","content":5}]}`, "messages[1].content"},
		{"content object", `{"messages":[{"role":"u","content":{}}]}`, "messages[0].content"},
		{"content parts not text", `{"messages":[{"role":"u","content":[1]}]}`, "messages[0].content"},
		{"max_tokens negative", `{"max_tokens":-1,"messages":[{"role":"u"}]}`, "max_tokens"},
		{"max_tokens over the cap", `{"max_tokens":32769,"messages":[{"role":"u"}]}`, "max_tokens"},
		{"max_completion_tokens over the cap", `{"max_completion_tokens":32769,"messages":[{"role":"u"}]}`, "max_completion_tokens"},
		{"stream_options not an object", `{"stream_options":true,"messages":[{"role":"u"}]}`, "stream_options"},
		{"include_usage wrong type", `{"stream_options":{"include_usage":1},"messages":[{"role":"u"}]}`, "stream_options.include_usage"},
		{"stream_options a number", `{"stream_options":3,"messages":[{"role":"u"}]}`, "stream_options"},
		{"stream_options malformed inside", `{"stream_options":{"include_usage":tru},"messages":[{"role":"u"}]}`, ""},
		{"max_tokens wrong type", `{"max_tokens":"x","messages":[{"role":"u"}]}`, "max_tokens"},
		{"stream wrong type", `{"stream":1,"messages":[{"role":"u"}]}`, "stream"},
		{"n zero", `{"n":0,"messages":[{"role":"u"}]}`, "n"},
		{"n over the cap", `{"n":129,"messages":[{"role":"u"}]}`, "n"},
		{"n wrong type", `{"n":"2","messages":[{"role":"u"}]}`, "n"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseChat([]byte(tt.body), MaxTokens)
			var re *RequestError
			if !errors.As(err, &re) || re.Field != tt.field {
				t.Fatalf("err %v, want a *RequestError on field %q", err, tt.field)
			}
		})
	}
}

// TestTypeErrorsSpeakJSON: a wrong type names the field and the JSON types
// (issue 12: "got JSON string, want []json.RawMessage" named a Go type).
func TestTypeErrorsSpeakJSON(t *testing.T) {
	tests := []struct{ body, field, msg string }{
		{`{"messages":"x"}`, "messages", "must be an array, got a JSON string"},
		{`{"max_tokens":"8","messages":[{"role":"u"}]}`, "max_tokens", "must be an integer, got a JSON string"},
		{`{"max_tokens":1.5,"messages":[{"role":"u"}]}`, "max_tokens", "must be an integer, got the number 1.5"},
		{`{"max_tokens":1e30,"messages":[{"role":"u"}]}`, "max_tokens", "must be an integer, got the number 1e30"},
		{`{"stream":"yes","messages":[{"role":"u"}]}`, "stream", "must be a boolean, got a JSON string"},
		{`{"model":[],"messages":[{"role":"u"}]}`, "model", "must be a string, got a JSON array"},
		{`{"stream_options":[],"messages":[{"role":"u"}]}`, "stream_options", "must be an object, got a JSON array"},
	}
	for _, tt := range tests {
		_, err := ParseChat([]byte(tt.body), MaxTokens)
		var re *RequestError
		if !errors.As(err, &re) || re.Field != tt.field || re.Msg != tt.msg {
			t.Errorf("%s: err %#v, want field %q msg %q", tt.body, err, tt.field, tt.msg)
		}
		if re != nil && re.Error() != tt.field+": "+tt.msg {
			t.Errorf("%s: Error() = %q does not name the field", tt.body, re.Error())
		}
	}
}

func TestAnswerUsage(t *testing.T) {
	u, ok := AnswerUsage([]byte(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`))
	if !ok || u != (Usage{3, 5, 8}) || u.Total() != 8 {
		t.Fatalf("AnswerUsage = %+v, %v", u, ok)
	}
	if _, ok := AnswerUsage([]byte(`{"choices":[]}`)); ok {
		t.Fatal("usage read from an answer without one")
	}
	if u, ok := AnswerUsage([]byte(`{"usage":{"prompt_tokens":-3,"completion_tokens":4}}`)); !ok || u != (Usage{0, 4, 4}) {
		t.Fatalf("negative counts not clamped: %+v", u)
	}
}

func TestStreamMeter(t *testing.T) {
	var m StreamMeter
	events := []string{
		"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"a \"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"b \"}}]}\r\n\r\n",
		": comment\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":null,\"reasoning_content\":\"hm\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"reasoning\":\"so\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\"}}]}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"refusal\":\"no\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"\",\"tool_calls\":[],\"reasoning\":null}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":7}}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\n",
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
		"event: usage\nid: 7\ndata: {\"choices\":[],\ndata: \"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n",
		"data: [DONE]\n\n",
	}
	var usageOnly []int
	for i, e := range events {
		if m.Event(EventData(nil, []byte(e))) {
			usageOnly = append(usageOnly, i)
		}
	}
	if m.Chunks() != 7 { // content ×2, reasoning ×2, a tool call, a refusal, a number
		t.Fatalf("Chunks() = %d, want 7", m.Chunks())
	}
	if u, ok := m.Usage(); !ok || u.Total() != 5 {
		t.Fatalf("Usage() = %+v, %v", u, ok)
	}
	if !reflect.DeepEqual(usageOnly, []int{11}) {
		t.Fatalf("usage-only events %v, want [11]", usageOnly)
	}
}

// TestEventData: an event's data is what an EventSource hands its client:
// the data fields joined by "\n", one leading space dropped, any line
// ending, other fields and comments ignored.
func TestEventData(t *testing.T) {
	tests := []struct {
		event string
		want  []byte
	}{
		{"data: {\"a\":1}\n\n", []byte(`{"a":1}`)},
		{"data:{\"a\":1}\r\n\r\n", []byte(`{"a":1}`)},
		{"data:  two spaces\n", []byte(" two spaces")},
		{"event: x\nid: 3\ndata: a\n: note\ndata: b\n\n", []byte("a\nb")},
		{"data\ndata: x\n", []byte("\nx")},
		{"data: no end", []byte("no end")},
		{": keep-alive\n\n", nil},
		{"event: x\n\n", nil},
		{"datum: x\n\n", nil},
	}
	for _, tt := range tests {
		if got := EventData([]byte("junk"), []byte(tt.event)); !bytes.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("EventData(%q) = %q, want %q", tt.event, got, tt.want)
		}
	}
}
