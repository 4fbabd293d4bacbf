package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/openai"
)

func TestParseChatRequest(t *testing.T) {
	for _, tc := range []struct {
		body   string
		field  string // "" = valid
		tokens int64
		stream bool
	}{
		{`{"messages":[{"role":"user","content":"12345678"}]}`, "", 2 + DefaultMaxTokens, false},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"abcd"}]}],"max_tokens":10,"stream":true}`, "", 11, true},
		{`{"messages":[{"role":"user","content":"ab"}],"max_completion_tokens":4}`, "", 5, false},
		{`{"messages":[{"role":"assistant","content":null}],"max_tokens":0}`, "", 0, false},
		{`{"messages":"hi"}`, "messages", 0, false},
		{`{"messages":[]}`, "messages", 0, false},
		{`{"messages":[{"role":""}]}`, "messages[0].role", 0, false},
		{`{"messages":[{"role":"u","content":{}}]}`, "messages[0].content", 0, false},
		{`{"messages":[{"role":"u"}],"max_tokens":99999999}`, "max_tokens", 0, false},
		{`{"messages":[{"role":"u"}],"stream":"yes"}`, "stream", 0, false},
		{`{"messages":[{"role":"u"}]} {}`, "", -1, false},
		{``, "", -1, false},
	} {
		c, err := ParseChatRequest([]byte(tc.body), MaxMaxTokens)
		if tc.field == "" && tc.tokens >= 0 {
			if err != nil || c.Tokens() != tc.tokens || c.Stream != tc.stream {
				t.Errorf("%s: %+v tokens %d, %v; want tokens %d stream %v", tc.body, c, c.Tokens(), err, tc.tokens, tc.stream)
			}
			continue
		}
		var re *openai.RequestError
		if !errors.As(err, &re) || re.Field != tc.field {
			t.Errorf("%s: error %v; want a RequestError naming %q", tc.body, err, tc.field)
		}
	}
}

func FuzzChatRequest(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`))
	f.Add([]byte(`{"messages":[{"role":1}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseChatRequest(body, MaxMaxTokens)
		if err != nil {
			var re *openai.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RequestError", err)
			}
			return
		}
		if c.Messages < 1 || c.MaxTokens < 0 || c.MaxTokens > MaxMaxTokens || c.PromptChars < 0 || c.Tokens() < 0 {
			t.Fatalf("accepted an invalid request: %+v", c)
		}
		// Every model route's parser must hold too.
		_, _ = ParsePredictRequest(body)
		_, _ = ParseAgentRequest(body, 1000, 5, MaxMaxTokens)
	})
}

func TestParseAgentRequest(t *testing.T) {
	for _, tc := range []struct {
		body  string
		field string // "" = valid
		steps int
	}{
		{`{"prompt":"refund order 42"}`, "", 1},
		{`{"prompt":"x","max_tokens":8,"steps":5}`, "", 5},
		{`{"prompt":""}`, "prompt", 0},
		{`{"prompt":"` + strings.Repeat("é", 21) + `"}`, "prompt", 0}, // 21 characters > 20
		{`{"prompt":"x","steps":0}`, "steps", 0},
		{`{"prompt":"x","steps":6}`, "steps", 0},
		{`{"prompt":"x","steps":"2"}`, "steps", 0},
		{`{"prompt":"x","max_tokens":32769}`, "max_tokens", 0},
		{`{"prompt":"x","max_tokens":1e30}`, "max_tokens", 0},
	} {
		a, err := ParseAgentRequest([]byte(tc.body), 20, 5, MaxMaxTokens)
		if tc.field == "" {
			if err != nil || a.Steps != tc.steps {
				t.Errorf("%s: %+v, %v; want steps %d", tc.body, a, err, tc.steps)
			}
			continue
		}
		var re *openai.RequestError
		if !errors.As(err, &re) || re.Field != tc.field {
			t.Errorf("%s: error %v; want a RequestError naming %q", tc.body, err, tc.field)
		}
	}
}

// FuzzAgentRequest: any body parses into a request within its bounds or
// fails with a *RequestError.
func FuzzAgentRequest(f *testing.F) {
	for _, s := range []string{`{"prompt":"x","max_tokens":8,"steps":2}`, `{"prompt":""}`, `{"steps":1e9}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := ParseAgentRequest(body, 64, 5, MaxMaxTokens)
		if err != nil {
			var re *openai.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RequestError", err)
			}
			return
		}
		if a.Prompt == "" || a.Steps < 1 || a.Steps > 5 || a.MaxTokens < 0 || a.MaxTokens > MaxMaxTokens || a.SubTokens() < 0 {
			t.Fatalf("accepted an invalid request: %+v", a)
		}
	})
}
