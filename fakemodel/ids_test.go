package fakemodel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestAnswerIDs: a chat completion's id starts with chatcmpl-, a text
// completion's with cmpl- (OpenAI's and vLLM's prefixes), streamed or
// not, every chunk of a stream carries its answer's id, and two nodes of
// a lab never hand out the same id (a client or a log keyed on ids would
// merge their answers).
func TestAnswerIDs(t *testing.T) {
	k := fixedKnobs(1, 4, wire.OverflowQueue)
	k.TTFTMs, k.TokensPerS = 1, 5000
	_, a := startNode(t, k)
	_, b := startNode(t, k)
	ids := map[string]string{}
	for _, tt := range []struct {
		path, body, prefix string
	}{
		{wire.PathChat, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, "chatcmpl-"},
		{wire.PathChat, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true}`, "chatcmpl-"},
		{wire.PathCompletions, `{"prompt":"hi","max_tokens":2}`, "cmpl-"},
		{wire.PathCompletions, `{"prompt":"hi","max_tokens":2,"stream":true}`, "cmpl-"},
	} {
		for _, base := range []string{a, b} {
			status, body, err := post(context.Background(), base+tt.path, tt.body)
			if err != nil || status != 200 {
				t.Fatalf("%s %s: %d %s %v", tt.path, tt.body, status, body, err)
			}
			answers := []string{string(body)}
			if strings.Contains(tt.body, `"stream":true`) {
				answers = nil
				for _, line := range strings.Split(string(body), "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
						answers = append(answers, d)
					}
				}
			}
			var first string
			for _, ans := range answers {
				var v struct{ ID string }
				if err := json.Unmarshal([]byte(ans), &v); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(v.ID, tt.prefix) || (first != "" && v.ID != first) {
					t.Fatalf("%s %s: id %q in %s; want the prefix %s, one id per answer", tt.path, tt.body, v.ID, ans, tt.prefix)
				}
				first = v.ID
			}
			if prev, dup := ids[first]; dup {
				t.Fatalf("id %s handed out twice: by %s and by %s", first, prev, base)
			}
			ids[first] = base
		}
	}
}
