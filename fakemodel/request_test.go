package fakemodel

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/levee-lab/levee/internal/openai"
)

func TestParseChatRequest(t *testing.T) {
	tests := []struct {
		name, body string
		field      string // "" success, "-" error without field
		check      func(t *testing.T, r ChatRequest)
	}{
		{"minimal", `{"messages":[{"role":"user","content":"hello world!"}]}`, "", func(t *testing.T, r ChatRequest) {
			if r.Stream || r.PromptTokens() != 3 || r.MaxTokens != DefaultCompletionTokens {
				t.Fatalf("%+v prompt %d", r, r.PromptTokens())
			}
		}},
		{"stream max tokens", `{"model":"m","stream":true,"max_tokens":7,"messages":[{"role":"user","content":"x"}],"temperature":0.2}`, "", func(t *testing.T, r ChatRequest) {
			if !r.Stream || r.Model != "m" || r.MaxTokens != 7 {
				t.Fatalf("%+v", r)
			}
		}},
		{"max_completion_tokens wins", `{"max_tokens":7,"max_completion_tokens":9,"messages":[{"role":"user","content":"x"}]}`, "", func(t *testing.T, r ChatRequest) {
			if r.MaxTokens != 9 {
				t.Fatalf("%+v", r)
			}
		}},
		{"content parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"text","text":"efgh"}]}]}`, "", func(t *testing.T, r ChatRequest) {
			if r.Messages[0].Content != "abcdefgh" || r.PromptTokens() != 2 {
				t.Fatalf("%+v", r)
			}
		}},
		{"null content", `{"messages":[{"role":"assistant","content":null}]}`, "", func(t *testing.T, r ChatRequest) {}},
		{"empty body", ``, "-", nil},
		{"not object", `"hi"`, "-", nil},
		{"malformed", `{"messages":[`, "-", nil},
		{"trailing", `{"messages":[{"role":"u","content":"x"}]}x`, "-", nil},
		{"no messages", `{"model":"m"}`, "messages", nil},
		{"messages not array", `{"messages":{}}`, "messages", nil},
		{"message not object", `{"messages":[3]}`, "messages[0]", nil},
		{"no role", `{"messages":[{"content":"x"}]}`, "messages[0].role", nil},
		{"content number", `{"messages":[{"role":"user","content":5}]}`, "messages[0].content", nil},
		{"stream string", `{"stream":"yes","messages":[{"role":"user","content":"x"}]}`, "stream", nil},
		{"negative max_tokens", `{"max_tokens":-1,"messages":[{"role":"user","content":"x"}]}`, "max_tokens", nil},
		{"huge max_tokens", `{"max_completion_tokens":100000,"messages":[{"role":"user","content":"x"}]}`, "max_completion_tokens", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseChatRequest([]byte(tt.body), MaxCompletionTokens)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ParseChatRequest = %v", err)
				}
				tt.check(t, r)
				return
			}
			var re *openai.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("ParseChatRequest = %v, want RequestError", err)
			}
			if tt.field != "-" && re.Field != tt.field {
				t.Fatalf("field %q (%v), want %q", re.Field, err, tt.field)
			}
		})
	}
}

func TestParsePredictRequest(t *testing.T) {
	for _, ok := range []string{``, `  `, `{}`, `{"amount":12.5,"country":"FR"}`} {
		if _, err := ParsePredictRequest([]byte(ok)); err != nil {
			t.Errorf("ParsePredictRequest(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{`[]`, `{`, `3`, `{"a":1}{}`} {
		if _, err := ParsePredictRequest([]byte(bad)); err == nil {
			t.Errorf("ParsePredictRequest(%q) = nil error", bad)
		}
	}
}

func TestPredictAnswer(t *testing.T) {
	for _, tt := range []struct {
		score float64
		want  string
	}{{0.95, "APPROVE"}, {0.7, "APPROVE"}, {0.5, "REVIEW"}, {0.1, "DECLINE"}} {
		if got := predictAnswer(tt.score); got.Decision != tt.want {
			t.Errorf("predictAnswer(%v) = %+v, want %s", tt.score, got, tt.want)
		}
	}
}

// FuzzParseChatRequest: any body either parses into a usable request or is a
// RequestError; it never panics.
func FuzzParseChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"stream":true,"max_tokens":3,"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"messages":[null]}`, `[]`, `{`, ``, `{"max_tokens":1e99}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseChatRequest(body, MaxCompletionTokens)
		if err != nil {
			var re *openai.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a RequestError", err)
			}
			return
		}
		if len(r.Messages) == 0 || r.MaxTokens < 0 || r.MaxTokens > MaxCompletionTokens || r.PromptTokens() < 1 {
			t.Fatalf("accepted a bad request: %+v", r)
		}
	})
}

// FuzzKnobsPatch: a patch either yields valid knobs or an error that leaves
// the knobs unchanged; it never panics, and accepted knobs round-trip.
func FuzzKnobsPatch(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"slots":4}`, `{"latency":{"dist":"fixed","fixed_ms":10}}`, `{"error_rate":0.5,"hang_rate":0.6}`,
		`{"overflow":"bounded","queue_size":3}`, `{"cpu_hog_duty":0.99}`, `null`, `{"latency":null}`,
	} {
		f.Add([]byte(s))
	}
	base := DefaultKnobs()
	f.Fuzz(func(t *testing.T, patch []byte) {
		k, err := base.Patch(patch)
		if err != nil {
			if k != base {
				t.Fatalf("failed patch changed knobs")
			}
			return
		}
		if err := k.Validate(); err != nil {
			t.Fatalf("accepted invalid knobs: %v", err)
		}
		b, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DefaultKnobs().Patch(b)
		if err != nil || back != k {
			t.Fatalf("round trip: %v, %+v != %+v", err, back, k)
		}
	})
}
