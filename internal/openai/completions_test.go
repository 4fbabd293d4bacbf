package openai

import "testing"

// TestStreamMeterCountsTextChunks: a legacy completion stream carries its
// tokens in choices[].text, not a delta; the meter counts those chunks
// (the settlement of a stream without a usage chunk) but not an empty
// final one.
func TestStreamMeterCountsTextChunks(t *testing.T) {
	var m StreamMeter
	for _, d := range []string{
		`{"object":"text_completion","choices":[{"index":0,"text":"the ","finish_reason":null}]}`,
		`{"object":"text_completion","choices":[{"index":0,"text":"levee ","finish_reason":null}]}`,
		`{"object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}]}`,
		`[DONE]`,
	} {
		m.Event([]byte(d))
	}
	if m.Chunks() != 2 {
		t.Fatalf("counted %d chunks, want 2", m.Chunks())
	}
}

// TestParsePromptShapes: the four shapes of a prompt and what is measured
// of each.
func TestParsePromptShapes(t *testing.T) {
	for _, tc := range []struct {
		body string
		want Prompt
	}{
		{`{"prompt":"abcdefgh"}`, Prompt{Count: 1, Chars: 8}},
		{`{"prompt":["ab","cdé"]}`, Prompt{Count: 2, Chars: 5}},
		{`{"prompt":[1,2,3]}`, Prompt{Count: 1, Tokens: 3}},
		{`{"prompt":[[1,2],[3]]}`, Prompt{Count: 2, Tokens: 3}},
	} {
		c, err := ParseCompletion([]byte(tc.body), MaxTokens)
		if err != nil || c.Prompt != tc.want || c.MaxTokens != DefaultMaxTokens || c.N != 1 || c.BestOf != 1 {
			t.Errorf("%s: %+v, %v; want prompt %+v", tc.body, c, err, tc.want)
		}
	}
}

// TestParsePromptRefusesNulls: a null token id is no token (encoding/json
// would read it as 0).
func TestParsePromptRefusesNulls(t *testing.T) {
	for _, body := range []string{`{"prompt":[null]}`, `{"prompt":[1,null]}`, `{"prompt":[[1],[null]]}`, `{"prompt":["a",null]}`} {
		if _, err := ParseCompletion([]byte(body), MaxTokens); err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
}
