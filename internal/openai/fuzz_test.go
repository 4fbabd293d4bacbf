package openai

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// FuzzParseChat: any body either parses into a request within the limits
// or fails with a *RequestError; it never panics.
func FuzzParseChat(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":8,"messages":[{"role":"user","content":[{"type":"text","text":"b"}]}]}`,
		`{"max_completion_tokens":3,"messages":[{"role":"u","content":null}]}`,
		`{"messages":"x"}`, `{"max_tokens":1e30}`, `{"stream_options":3}`, `[]`, ``, `{"a":1} x`,
		`{"messages":[{"role":"u"}],"stop":["a","b"]}`, `{"messages":[{"role":"u"}],"stop":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseChat(body, MaxTokens)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || re.Msg == "" {
				t.Fatalf("error %v is not a *RequestError with a message", err)
			}
			if bytes.Contains([]byte(re.Msg), []byte("json.")) || bytes.Contains([]byte(re.Msg), []byte("[]")) {
				t.Fatalf("error %q speaks Go, not JSON", re.Msg)
			}
			return
		}
		if len(c.Messages) == 0 || c.N < 1 || c.N > MaxChoices || c.MaxTokens < 0 || c.MaxTokens > MaxTokens || c.Completion() < 0 {
			t.Fatalf("accepted an out-of-range request: %+v", c)
		}
		if c.IncludeUsage && !c.HasStreamOptions {
			t.Fatal("include_usage without stream_options")
		}
		if slices.Contains(c.Stop, "") || (c.Stop != nil && len(c.Stop) == 0) {
			t.Fatalf("accepted stop %q: an empty sequence, or an empty list not nil", c.Stop)
		}
	})
}

// FuzzStreamMeter: any event is read without panicking, and counts stay
// within their bounds.
func FuzzStreamMeter(f *testing.F) {
	for _, s := range []string{
		`data: {"choices":[{"delta":{"content":"a"}}]}`,
		`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`,
		`data: [DONE]`, `event: x`, `data: {"usage":{"prompt_tokens":-4,"completion_tokens":9e99}}`, `data:{`,
		"event: e\r\ndata: {\"choices\":[],\r\ndata: \"usage\":{}}\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var m StreamMeter
		only := m.Event(EventData(nil, line))
		u, ok := m.Usage()
		if only && !ok {
			t.Fatal("a usage-only chunk without usage")
		}
		if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.PromptTokens > maxUsage || u.CompletionTokens > maxUsage {
			t.Fatalf("usage out of bounds: %+v", u)
		}
		if m.Chunks() > 1 {
			t.Fatalf("one event counted %d chunks", m.Chunks())
		}
		if _, ok := AnswerUsage(line); ok && !bytes.Contains(bytes.ToLower(line), []byte("usage")) {
			t.Fatal("usage read from an answer without one")
		}
	})
}

// FuzzParseCompletionAndEmbeddings: any body either parses into a
// request within the limits, with a non-empty prompt or input, or fails
// with a *RequestError naming JSON, not Go; it never panics.
func FuzzParseCompletionAndEmbeddings(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi"}`, `{"prompt":["a","b"],"n":2,"best_of":3,"max_tokens":4}`, `{"prompt":[1,2]}`, `{"prompt":[[1],[2,3]]}`,
		`{"prompt":"a","stream":true,"stream_options":{"include_usage":true}}`, `{"prompt":[null]}`, `{"prompt":""}`,
		`{"input":"x","encoding_format":"base64","dimensions":3}`, `{"input":[[]]}`, `{"input":{}}`, `[]`, ``,
		`{"prompt":"a","stop":"x"}`, `{"prompt":"a","stop":["x",""]}`,
	} {
		f.Add([]byte(s))
	}
	check := func(t *testing.T, err error) bool {
		if err == nil {
			return true
		}
		var re *RequestError
		if !errors.As(err, &re) || re.Msg == "" {
			t.Fatalf("error %v is not a *RequestError with a message", err)
		}
		if bytes.Contains([]byte(re.Msg), []byte("json.")) {
			t.Fatalf("error %q speaks Go, not JSON", re.Msg)
		}
		return false
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseCompletion(body, MaxTokens)
		if check(t, err) {
			p := c.Prompt
			if p.Count < 1 || p.Chars+p.Tokens < 1 || c.N < 1 || c.BestOf < c.N || c.BestOf > MaxChoices ||
				c.MaxTokens < 0 || c.MaxTokens > MaxTokens || c.Sequences() < 1 || p.EstimatedTokens() < 1 || slices.Contains(c.Stop, "") {
				t.Fatalf("accepted an out-of-range completion: %+v", c)
			}
		}
		e, err := ParseEmbeddings(body)
		if check(t, err) {
			if e.Input.Count < 1 || e.Input.Count > MaxEmbeddingInputs || e.Input.EstimatedTokens() < 1 || e.Dimensions < 0 ||
				(e.EncodingFormat != "float" && e.EncodingFormat != "base64") {
				t.Fatalf("accepted an out-of-range embeddings request: %+v", e)
			}
		}
	})
}
