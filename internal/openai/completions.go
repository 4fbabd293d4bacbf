package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// MaxEmbeddingInputs bounds the inputs of one embeddings request
// (OpenAI's own bound).
const MaxEmbeddingInputs = 2048

// Prompt is what Levee measures of a "prompt" (completions) or "input"
// (embeddings): a string, an array of strings, an array of token ids or
// an array of arrays of token ids.
type Prompt struct {
	// Count is the prompts (or inputs) it holds: 1 for a string or one
	// array of token ids.
	Count int
	// Chars is the characters of its text; Tokens its token ids.
	Chars, Tokens int
}

// EstimatedTokens is the prompt's estimated tokens: characters / 4
// (rounded up) plus the token ids given as such.
func (p Prompt) EstimatedTokens() int64 { return int64((p.Chars+3)/4) + int64(p.Tokens) }

// parsePrompt reads the value of field: a non-empty string, a non-empty
// array of non-empty strings, a non-empty array of integers (token ids)
// or a non-empty array of non-empty arrays of integers. An empty prompt
// is refused: OpenAI-compatible servers answer it 400 too (vLLM), or
// make one up.
func parsePrompt(field string, v json.RawMessage) (Prompt, error) {
	const want = "must be a non-empty string, array of strings, array of token ids or array of token-id arrays"
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return Prompt{}, &RequestError{field, "is required: " + want[len("must be "):]}
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" {
			return Prompt{}, &RequestError{field, want}
		}
		return Prompt{Count: 1, Chars: utf8.RuneCountInString(s)}, nil
	case '[':
	default:
		return Prompt{}, &RequestError{field, want}
	}
	var items []json.RawMessage
	if json.Unmarshal(v, &items) != nil || len(items) == 0 {
		return Prompt{}, &RequestError{field, want}
	}
	first := bytes.TrimSpace(items[0])
	switch {
	case len(first) > 0 && first[0] == '"':
		p := Prompt{Count: len(items)}
		for i, it := range items {
			var s string
			if json.Unmarshal(it, &s) != nil || s == "" {
				return Prompt{}, &RequestError{fmt.Sprintf("%s[%d]", field, i), "must be a non-empty string (every item of a string array)"}
			}
			p.Chars += utf8.RuneCountInString(s)
		}
		return p, nil
	case len(first) > 0 && first[0] == '[':
		p := Prompt{Count: len(items)}
		for i, it := range items {
			n, ok := tokenIDs(it)
			if !ok {
				return Prompt{}, &RequestError{fmt.Sprintf("%s[%d]", field, i), "must be a non-empty array of token ids (integers)"}
			}
			p.Tokens += n
		}
		return p, nil
	}
	n, ok := tokenIDs(v)
	if !ok {
		return Prompt{}, &RequestError{field, want}
	}
	return Prompt{Count: 1, Tokens: n}, nil
}

// tokenIDs reads a non-empty array of integers (no null among them) and
// returns its length.
func tokenIDs(v json.RawMessage) (int, bool) {
	var ids []*int64
	if json.Unmarshal(v, &ids) != nil || len(ids) == 0 || slices.Contains(ids, nil) {
		return 0, false
	}
	return len(ids), true
}

// Completion is what Levee reads of a legacy text completion request
// (POST /v1/completions).
type Completion struct {
	Model  string
	Prompt Prompt
	Stream bool
	// MaxTokens is max_tokens, DefaultMaxTokens when absent or null
	// (OpenAI's and vLLM's default for this endpoint).
	MaxTokens int
	// N is n (1 when absent); BestOf is best_of (N when absent): the
	// server generates BestOf sequences per prompt and returns N.
	N, BestOf int
	// IncludeUsage and HasStreamOptions are as in Chat.
	IncludeUsage, HasStreamOptions bool
	// Stop is stop, as in Chat.
	Stop []string
}

// Sequences is how many sequences the request makes the model generate:
// best_of (≥ n) for each prompt.
func (c Completion) Sequences() int { return c.Prompt.Count * max(c.N, c.BestOf) }

// ParseCompletion checks a completion body: a JSON object with a
// non-empty "prompt" (see Prompt), optional 0 ≤ "max_tokens" ≤ maxTokens,
// 1 ≤ "n" ≤ MaxChoices, n ≤ "best_of" ≤ MaxChoices, a boolean "stream"
// (not with best_of > n, as OpenAI says: the best cannot be known before
// the end), "stream_options" and "stop" as in ParseChat. Errors are
// *RequestError.
func ParseCompletion(body []byte, maxTokens int) (Completion, error) {
	var raw struct {
		Model         *string         `json:"model"`
		Prompt        json.RawMessage `json:"prompt"`
		Stream        *bool           `json:"stream"`
		StreamOptions json.RawMessage `json:"stream_options"`
		MaxTokens     *int            `json:"max_tokens"`
		N             *int            `json:"n"`
		BestOf        *int            `json:"best_of"`
		Stop          json.RawMessage `json:"stop"`
	}
	if err := DecodeObject(body, &raw); err != nil {
		return Completion{}, err
	}
	c := Completion{MaxTokens: DefaultMaxTokens, N: 1}
	if raw.Model != nil {
		c.Model = *raw.Model
	}
	if raw.Stream != nil {
		c.Stream = *raw.Stream
	}
	if raw.StreamOptions != nil {
		c.HasStreamOptions = true
		var err error
		if c.IncludeUsage, err = parseStreamOptions(raw.StreamOptions); err != nil {
			return Completion{}, err
		}
	}
	var err error
	if c.Stop, err = ParseStop(raw.Stop); err != nil {
		return Completion{}, err
	}
	if raw.MaxTokens != nil {
		c.MaxTokens = *raw.MaxTokens
	}
	if err := CheckMaxTokens("max_tokens", c.MaxTokens, maxTokens); err != nil {
		return Completion{}, err
	}
	if raw.N != nil {
		c.N = *raw.N
	}
	if c.N < 1 || c.N > MaxChoices {
		return Completion{}, &RequestError{"n", fmt.Sprintf("must be an integer in [1, %d], got %d", MaxChoices, c.N)}
	}
	c.BestOf = c.N
	if raw.BestOf != nil {
		c.BestOf = *raw.BestOf
		if c.BestOf < c.N || c.BestOf > MaxChoices {
			return Completion{}, &RequestError{"best_of", fmt.Sprintf("must be an integer in [n, %d] (n is %d), got %d", MaxChoices, c.N, c.BestOf)}
		}
		if c.Stream && c.BestOf > c.N {
			return Completion{}, &RequestError{"best_of", "cannot be more than n with stream: true"}
		}
	}
	if c.Prompt, err = parsePrompt("prompt", raw.Prompt); err != nil {
		return Completion{}, err
	}
	return c, nil
}

// Embeddings is what Levee reads of an embeddings request
// (POST /v1/embeddings).
type Embeddings struct {
	Model string
	Input Prompt
	// EncodingFormat is "float" (the default) or "base64" (little-endian
	// float32s, the OpenAI clients' default).
	EncodingFormat string
	// Dimensions is dimensions, 0 when absent.
	Dimensions int
}

// ParseEmbeddings checks an embeddings body: a JSON object with a
// non-empty "input" (see Prompt) of at most MaxEmbeddingInputs items, an
// optional "encoding_format" "float" or "base64" and an optional integer
// "dimensions" ≥ 1. Errors are *RequestError.
func ParseEmbeddings(body []byte) (Embeddings, error) {
	var raw struct {
		Model          *string         `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat *string         `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
	}
	if err := DecodeObject(body, &raw); err != nil {
		return Embeddings{}, err
	}
	e := Embeddings{EncodingFormat: "float"}
	if raw.Model != nil {
		e.Model = *raw.Model
	}
	if f := raw.EncodingFormat; f != nil {
		if *f != "float" && *f != "base64" {
			return Embeddings{}, &RequestError{"encoding_format", fmt.Sprintf("must be \"float\" or \"base64\", got %q", *f)}
		}
		e.EncodingFormat = *f
	}
	if d := raw.Dimensions; d != nil {
		if *d < 1 {
			return Embeddings{}, &RequestError{"dimensions", fmt.Sprintf("must be an integer ≥ 1, got %d", *d)}
		}
		e.Dimensions = *d
	}
	var err error
	if e.Input, err = parsePrompt("input", raw.Input); err != nil {
		return Embeddings{}, err
	}
	if e.Input.Count > MaxEmbeddingInputs {
		return Embeddings{}, &RequestError{"input", fmt.Sprintf("must hold at most %d inputs, got %d", MaxEmbeddingInputs, e.Input.Count)}
	}
	return e, nil
}
