package fakemodel

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestAnswerTokensBeyondTheDefaultBound: a node started with a larger
// max_tokens bound (--max-tokens) takes an answer_tokens knob beyond the
// default 32,768, so its natural answers can be as long as its bound lets
// a request ask: a 35,000-token answer to max_tokens 40,000 ends "stop".
// A request's max_tokens still caps the answer, so the knob needs no
// bound of the node's own.
func TestAnswerTokensBeyondTheDefaultBound(t *testing.T) {
	k := fixedKnobs(1, 4, OverflowReject)
	k.AnswerTokens, k.MsPer1kTokens = 35_000, 0
	_, url := startNode(t, k, WithMaxTokens(40_000))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, body, err := post(ctx, url+"/v1/chat/completions", `{"model":"t","messages":[{"role":"user","content":"hi"}],"max_tokens":40000}`)
	if err != nil || status != http.StatusOK {
		t.Fatalf("chat: %d %s %v", status, body, err)
	}
	var got struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Usage.CompletionTokens != 35_000 || len(got.Choices) != 1 || got.Choices[0].FinishReason != FinishStop {
		t.Errorf("answer: %d tokens, choices %+v; want 35000, one, stop", got.Usage.CompletionTokens, got.Choices)
	}
}
