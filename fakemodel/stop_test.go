package fakemodel

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestStopSequences: "stop" ends the answer as vLLM ends it — at the
// token that completes the first stop sequence to appear, the text cut
// where the sequence begins, finish_reason "stop", usage counting the
// tokens generated (that last one included) — in chat and text
// completions, streamed or not, the stream's text the same as the plain
// answer's; a sequence the answer never reaches changes nothing, and a
// stop of the wrong type is a 400 naming it.
func TestStopSequences(t *testing.T) {
	k := fixedKnobs(1, 4, wire.OverflowQueue)
	k.TTFTMs, k.TokensPerS, k.AnswerTokens = 1, 5000, 0
	_, base := startNode(t, k)
	// The answer is "the levee holds while the river rises slowly and the
	// queue drains one slot at a time the levee …".
	for _, tt := range []struct {
		name, extra, text, finish string
		tokens                    int
	}{
		{"word", `"max_tokens":5,"stop":["levee"]`, "the ", FinishStop, 2},
		{"string", `"max_tokens":5,"stop":"levee"`, "the ", FinishStop, 2},
		{"across tokens", `"max_tokens":5,"stop":"vee h"`, "the le", FinishStop, 3},
		{"first token", `"max_tokens":5,"stop":["the"]`, "", FinishStop, 1},
		{"earliest of several", `"max_tokens":9,"stop":["river","holds","zzz"]`, "the levee ", FinishStop, 3},
		{"past the period", `"max_tokens":40,"stop":["time the lev"]`,
			"the levee holds while the river rises slowly and the queue drains one slot at a ", FinishStop, 19},
		{"never", `"max_tokens":3,"stop":["zzz"]`, "the levee holds ", FinishLength, 3},
		{"beyond max_tokens", `"max_tokens":3,"stop":"river"`, "the levee holds ", FinishLength, 3},
		{"empty list", `"max_tokens":2,"stop":[]`, "the levee ", FinishLength, 2},
	} {
		for _, n := range []int{1, 2} {
			chat := `{"messages":[{"role":"user","content":"abcd"}],"n":` + itoa(n) + `,` + tt.extra
			text := `{"prompt":"abcd","n":` + itoa(n) + `,` + tt.extra
			for _, r := range []struct{ path, body string }{{wire.PathChat, chat}, {wire.PathCompletions, text}} {
				for _, stream := range []bool{false, true} {
					body := r.body + `}`
					if stream {
						body = r.body + `,"stream":true,"stream_options":{"include_usage":true}}`
					}
					got, finish, usage := answer(t, base+r.path, body, n)
					for c := range n {
						if got[c] != tt.text || finish[c] != tt.finish {
							t.Errorf("%s: %s: choice %d: %q, finish %q; want %q, %q", tt.name, body, c, got[c], finish[c], tt.text, tt.finish)
						}
					}
					if want := (Usage{PromptTokens: 1, CompletionTokens: n * tt.tokens, TotalTokens: 1 + n*tt.tokens}); usage != want {
						t.Errorf("%s: %s: usage %+v, want %+v", tt.name, body, usage, want)
					}
				}
			}
		}
	}
	for _, bad := range []struct{ stop, field string }{{`5`, "stop"}, {`""`, "stop"}, {`["a",""]`, "stop[1]"}, {`["a",1]`, "stop[1]"}, {`{}`, "stop"}} {
		for _, path := range []string{wire.PathChat, wire.PathCompletions} {
			status, b, err := post(context.Background(), base+path, `{"messages":[{"role":"user","content":"x"}],"prompt":"x","stop":`+bad.stop+`}`)
			var e wire.ErrorBody
			if err != nil || status != 400 || json.Unmarshal(b, &e) != nil || e.Error.Param != bad.field {
				t.Errorf("%s stop %s: %d %s %v; want 400 naming %s", path, bad.stop, status, b, err, bad.field)
			}
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// answer posts a chat or text completion and returns each choice's text
// and finish_reason and the usage, from a plain answer or a stream (its
// chunks' text concatenated, its usage chunk).
func answer(t *testing.T, url, body string, n int) (text, finish []string, usage Usage) {
	t.Helper()
	status, b, err := post(context.Background(), url, body)
	if err != nil || status != 200 {
		t.Fatalf("%s: %d %s %v", body, status, b, err)
	}
	text, finish = make([]string, n), make([]string, n)
	type choice struct {
		Index        int
		Text         string
		Message      struct{ Content string }
		Delta        struct{ Content string }
		FinishReason *string `json:"finish_reason"`
	}
	var msgs []string
	if strings.Contains(body, `"stream":true`) {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
				msgs = append(msgs, d)
			}
		}
	} else {
		msgs = []string{string(b)}
	}
	for _, m := range msgs {
		var v struct {
			Choices []choice
			Usage   *Usage
		}
		if err := json.Unmarshal([]byte(m), &v); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		for _, c := range v.Choices {
			text[c.Index] += c.Text + c.Message.Content + c.Delta.Content
			if c.FinishReason != nil {
				finish[c.Index] = *c.FinishReason
			}
		}
		if v.Usage != nil {
			usage = *v.Usage
		}
	}
	return text, finish, usage
}

// TestWithStopMatchesNaive: withStop, which searches only the answer's
// first period plus the longest sequence, ends every answer where a
// search of the whole text would: sequences cut from anywhere in long
// answers (across the period, across tokens), and ones that never occur.
func TestWithStopMatchesNaive(t *testing.T) {
	naive := func(tokens int, stop []string) (int, int, bool) {
		var text strings.Builder
		var ends []int
		for i := range tokens {
			text.WriteString(word(i))
			ends = append(ends, text.Len())
		}
		for i, end := range ends { // the first token after which some sequence is in the text
			best := -1
			for _, s := range stop {
				if k := strings.Index(text.String()[:end], s); k >= 0 && (best < 0 || k < best) {
					best = k
				}
			}
			if best >= 0 {
				return i + 1, best, true
			}
		}
		return tokens, -1, false
	}
	r := rand.New(rand.NewPCG(1, 2))
	var full strings.Builder
	for i := range 200 {
		full.WriteString(word(i))
	}
	for range 3000 {
		tokens := r.IntN(120)
		var stop []string
		for range 1 + r.IntN(3) {
			if r.IntN(5) == 0 {
				stop = append(stop, "no such words")
				continue
			}
			at := r.IntN(full.Len() - 1)
			stop = append(stop, full.String()[at:at+1+r.IntN(min(150, full.Len()-at-1))])
		}
		j := job{complTokens: tokens, finish: FinishLength}.withStop(stop)
		n, cut, stopped := naive(tokens, stop)
		if j.complTokens != n || j.stopped != stopped || (stopped && (j.cut != cut || j.finish != FinishStop)) || (!stopped && j.finish != FinishLength) {
			t.Fatalf("%d tokens, stop %q: got %d tokens, cut %d (%v, %s); want %d, %d (%v)", tokens, stop, j.complTokens, j.cut, j.stopped, j.finish, n, cut, stopped)
		}
	}
}
