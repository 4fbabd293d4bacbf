package openai

import (
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
			Chat{Messages: []Message{{"user", "hi"}}}},
		{"everything", `{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"system","content":"a"},{"role":"user","content":[{"type":"text","text":"b"},{"type":"text","text":"c"}]},{"role":"assistant","content":null}]}`,
			Chat{Model: "m", Stream: true, MaxTokens: 8, MaxTokensSet: true, Messages: []Message{{"system", "a"}, {"user", "bc"}, {"assistant", ""}}}},
		{"max_completion_tokens wins", `{"max_tokens":8,"max_completion_tokens":3,"messages":[{"role":"u"}]}`,
			Chat{MaxTokens: 3, MaxTokensSet: true, Messages: []Message{{"u", ""}}}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseChat([]byte(tt.body), 100)
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
		{"max_tokens over the cap", `{"max_tokens":101,"messages":[{"role":"u"}]}`, "max_tokens"},
		{"max_completion_tokens over the cap", `{"max_completion_tokens":101,"messages":[{"role":"u"}]}`, "max_completion_tokens"},
		{"max_tokens wrong type", `{"max_tokens":"x","messages":[{"role":"u"}]}`, "max_tokens"},
		{"stream wrong type", `{"stream":1,"messages":[{"role":"u"}]}`, "stream"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseChat([]byte(tt.body), 100)
			var re *RequestError
			if !errors.As(err, &re) || re.Field != tt.field {
				t.Fatalf("err %v, want a *RequestError on field %q", err, tt.field)
			}
		})
	}
}
