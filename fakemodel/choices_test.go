package fakemodel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestChatHonoursN: a chat with n answers n choices (indexes 0..n−1) and
// counts every one's tokens in usage, as OpenAI-compatible servers do and
// as /v1/completions does; streamed, each step sends one chunk per choice
// carrying its index (the role on each choice's first), then each
// choice's finish_reason, then the usage asked for. The node's service
// time is that of n sequences: ms_per_1k_tokens charges n × max_tokens.
func TestChatHonoursN(t *testing.T) {
	k := fixedKnobs(0, 4, OverflowQueue)
	k.TTFTMs, k.TokensPerS, k.AnswerTokens = 1, 10000, 0
	_, url := startNode(t, k)
	status, b, err := post(context.Background(), url+wire.PathChat,
		`{"model":"t","n":3,"max_tokens":4,"messages":[{"role":"user","content":"abcdefgh"}]}`)
	var c Completion
	if err != nil || status != 200 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("%d %s %v", status, b, err)
	}
	if len(c.Choices) != 3 || c.Usage != (Usage{PromptTokens: 2, CompletionTokens: 12, TotalTokens: 14}) {
		t.Fatalf("n=3: %s", b)
	}
	for i, ch := range c.Choices {
		if ch.Index != i || ch.Message.Role != "assistant" || ch.Message.Content == "" || ch.FinishReason != FinishLength {
			t.Fatalf("choice %d: %+v in %s", i, ch, b)
		}
	}

	data, _ := streamEvents(t, url+wire.PathChat,
		`{"stream":true,"n":2,"max_tokens":3,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"abcdefgh"}]}`)
	tokens, roles, finished := map[int]int{}, map[int]int{}, map[int]string{}
	var usage *Usage
	for _, d := range data {
		if d == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Index        int               `json:"index"`
				Delta        map[string]string `json:"delta"`
				FinishReason *string           `json:"finish_reason"`
			} `json:"choices"`
			Usage *Usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil {
			t.Fatalf("chunk %s: %v", d, err)
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
		for _, x := range ch.Choices {
			if x.Delta["content"] != "" {
				tokens[x.Index]++
			}
			if x.Delta["role"] == "assistant" {
				roles[x.Index]++
			}
			if x.FinishReason != nil {
				finished[x.Index] = *x.FinishReason
			}
		}
	}
	if len(tokens) != 2 || tokens[0] != 3 || tokens[1] != 3 || roles[0] != 1 || roles[1] != 1 ||
		finished[0] != FinishLength || finished[1] != FinishLength || usage == nil || usage.CompletionTokens != 6 {
		t.Fatalf("n=2 stream: tokens %v roles %v finished %v usage %+v\n%v", tokens, roles, finished, usage, data)
	}

	// 1 ms a token: 8 choices of 100 tokens hold the slot at least 0.8 s
	// (one choice: 0.1 s). A lower bound only; a slow machine adds to it.
	k = fixedKnobs(0, 1, OverflowQueue)
	k.MsPer1kTokens, k.AnswerTokens = 1000, 0
	_, url = startNode(t, k)
	if status, b, err := post(context.Background(), url+wire.PathChat,
		`{"n":8,"max_tokens":100,"messages":[{"role":"user","content":"abcd"}]}`); err != nil || status != 200 {
		t.Fatalf("n=8: %d %s %v", status, b, err)
	}
	if got := scrapeSum(t, url, "levee_fakemodel_service_seconds"); got < 0.8 {
		t.Fatalf("service time of 8 × 100 tokens at 1 ms each: %.3f s, want ≥ 0.8 s", got)
	}
}
