package fakemodel

import (
	"context"
	"strings"
	"testing"
)

// TestStreamsPayTheTokenCost: ms_per_1k_tokens costs a stream what it costs
// a plain answer of the same tokens. Streams used to leave it out (their
// slot time was TTFT + tokens / tokens_per_s alone): with 200 ms per 1k
// tokens and a 2,000-token prompt a plain answer held its slot 0.40 s, the
// same request streamed 0.0002 s — a long prompt did not load a streaming
// node at all.
func TestStreamsPayTheTokenCost(t *testing.T) {
	k := fixedKnobs(0, 4, OverflowQueue)
	k.TTFTMs, k.TokensPerS, k.MsPer1kTokens = 0, 100_000, 200
	prompt := strings.Repeat("abcd", 2000) // 2,000 prompt tokens: 400 ms
	slotTime := func(stream bool) float64 {
		t.Helper()
		_, url := startNode(t, k)
		body := `{"model":"t","max_tokens":4,"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
			`,"messages":[{"role":"user","content":"` + prompt + `"}]}`
		if code, b, err := post(context.Background(), url+"/v1/chat/completions", body); err != nil || code != 200 {
			t.Fatalf("stream %v: %d %s %v", stream, code, b, err)
		}
		return scrapeSum(t, url, "levee_fakemodel_service_seconds")
	}
	plain, streamed := slotTime(false), slotTime(true)
	// Both hold their slot (2,000 + 4 tokens) × 0.2 ms ≈ 0.40 s; the ratio
	// is wide to spare a loaded machine, and far from the 0.0015 it was.
	if r := streamed / plain; r < 0.5 || r > 2 {
		t.Fatalf("slot time streamed %.4f s vs plain %.4f s (ratio %.3f), want the same token cost", streamed, plain, r)
	}
}
