package openai

import (
	"errors"
	"slices"
	"testing"
)

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

// TestParseStop: "stop" is read alike in chat and text completions: a
// string or an array of non-empty strings (any number, as vLLM takes),
// nil for absent, null and []; anything else a 400 naming stop or the
// item.
func TestParseStop(t *testing.T) {
	for _, tt := range []struct {
		stop string
		want []string
		err  string
	}{
		{``, nil, ""}, {`null`, nil, ""}, {`[]`, nil, ""}, {`"x"`, []string{"x"}, ""},
		{`["a","b\n","c","d","e"]`, []string{"a", "b\n", "c", "d", "e"}, ""},
		{`""`, nil, "stop"}, {`7`, nil, "stop"}, {`{}`, nil, "stop"}, {`true`, nil, "stop"},
		{`["a",""]`, nil, "stop[1]"}, {`[null]`, nil, "stop[0]"}, {`["a",["b"]]`, nil, "stop[1]"},
	} {
		field := ""
		if tt.stop != "" {
			field = `,"stop":` + tt.stop
		}
		c, cerr := ParseChat([]byte(`{"messages":[{"role":"u"}]`+field+`}`), MaxTokens)
		p, perr := ParseCompletion([]byte(`{"prompt":"p"`+field+`}`), MaxTokens)
		for _, r := range []struct {
			got []string
			err error
		}{{c.Stop, cerr}, {p.Stop, perr}} {
			var re *RequestError
			switch {
			case tt.err == "" && (r.err != nil || !slices.Equal(r.got, tt.want) || (r.got == nil) != (tt.want == nil)):
				t.Errorf("stop %s: %q %v, want %q", tt.stop, r.got, r.err, tt.want)
			case tt.err != "" && (!errors.As(r.err, &re) || re.Field != tt.err):
				t.Errorf("stop %s: %q %v, want an error naming %s", tt.stop, r.got, r.err, tt.err)
			}
		}
	}
}
