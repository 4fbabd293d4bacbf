package fakemodel

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// TestTextCompletionShapes: /v1/completions answers OpenAI's
// text_completion, one choice per prompt × n, each max_tokens long, with
// usage counting every sequence (best_of of them per prompt); streamed,
// each choice gets its token at each step, then its finish_reason, then
// the usage chunk asked for.
func TestTextCompletionShapes(t *testing.T) {
	k := fixedKnobs(1, 4, wire.OverflowQueue)
	k.TTFTMs, k.TokensPerS = 1, 5000
	_, base := startNode(t, k)
	ctx := context.Background()

	status, b, err := post(ctx, base+wire.PathCompletions, `{"model":"t","prompt":["abcd","efgh"],"max_tokens":3,"n":2,"best_of":3}`)
	var tc TextCompletion
	if err != nil || status != 200 || json.Unmarshal(b, &tc) != nil {
		t.Fatalf("%d %s %v", status, b, err)
	}
	if tc.Object != "text_completion" || len(tc.Choices) != 4 || tc.Choices[3].Index != 3 || len(strings.Fields(tc.Choices[3].Text)) != 3 ||
		*tc.Choices[0].FinishReason != FinishLength || tc.Usage.PromptTokens != 2 || tc.Usage.CompletionTokens != 18 || tc.Usage.TotalTokens != 20 {
		t.Fatalf("answer %s", b)
	}

	// Every prompt is a token at least: four one-letter prompts are 4
	// tokens (they were 1).
	tc = TextCompletion{}
	status, b, err = post(ctx, base+wire.PathCompletions, `{"prompt":["a","b","c","d"],"max_tokens":1}`)
	if err != nil || status != 200 || json.Unmarshal(b, &tc) != nil || tc.Usage.PromptTokens != 4 || tc.Usage.TotalTokens != 8 {
		t.Fatalf("four short prompts: %d %s %v", status, b, err)
	}

	status, b, err = post(ctx, base+wire.PathCompletions, `{"prompt":"abcd","max_tokens":3,"n":2,"stream":true,"stream_options":{"include_usage":true}}`)
	if err != nil || status != 200 {
		t.Fatalf("stream: %d %s %v", status, b, err)
	}
	tokens := map[int]int{}
	finished := map[int]string{}
	var usage *Usage
	done := false
	for _, line := range strings.Split(string(b), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if d == "[DONE]" {
			done = true
			continue
		}
		var ch TextCompletion
		if err := json.Unmarshal([]byte(d), &ch); err != nil || ch.Object != "text_completion" {
			t.Fatalf("chunk %s: %v", d, err)
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
		for _, c := range ch.Choices {
			if c.Text != "" {
				tokens[c.Index]++
			}
			if c.FinishReason != nil {
				finished[c.Index] = *c.FinishReason
			}
		}
	}
	if !done || tokens[0] != 3 || tokens[1] != 3 || finished[0] != FinishLength || finished[1] != FinishLength || usage == nil || usage.CompletionTokens != 6 {
		t.Fatalf("stream: tokens %v finished %v usage %+v done %v\n%s", tokens, finished, usage, done, b)
	}
}

// TestEmbeddings: /v1/embeddings answers one unit vector per input, of
// the dimensions asked (8 when absent), as floats or as base64
// little-endian float32s (the OpenAI clients' default), with usage of
// the inputs alone. Its service time is the prefill's (ttft_ms), not an
// answer's latency distribution: with answers taking ten minutes, an
// embedding still comes at once.
func TestEmbeddings(t *testing.T) {
	k := fixedKnobs(600e3, 4, wire.OverflowQueue)
	k.TTFTMs = 1
	_, base := startNode(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only a broken node waits ten minutes
	defer cancel()

	var a struct {
		Object string `json:"object"`
		Data   []struct {
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage Usage `json:"usage"`
	}
	status, b, err := post(ctx, base+wire.PathEmbeddings, `{"input":["abcdefgh","ijkl"]}`)
	if err != nil || status != 200 || json.Unmarshal(b, &a) != nil {
		t.Fatalf("%d %s %v", status, b, err)
	}
	var vec []float64
	if a.Object != "list" || len(a.Data) != 2 || a.Data[1].Index != 1 || json.Unmarshal(a.Data[1].Embedding, &vec) != nil || len(vec) != 8 ||
		a.Usage.PromptTokens != 3 || a.Usage.CompletionTokens != 0 || a.Usage.TotalTokens != 3 {
		t.Fatalf("answer %s", b)
	}

	status, b, err = post(ctx, base+wire.PathEmbeddings, `{"input":[[1,2,3]],"encoding_format":"base64","dimensions":16}`)
	if err != nil || status != 200 || json.Unmarshal(b, &a) != nil || len(a.Data) != 1 {
		t.Fatalf("base64: %d %s %v", status, b, err)
	}
	var s string
	if json.Unmarshal(a.Data[0].Embedding, &s) != nil {
		t.Fatalf("base64 embedding is no string: %s", b)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 16*4 {
		t.Fatalf("base64 embedding %q: %d bytes, %v", s, len(raw), err)
	}
	norm := 0.0
	for i := range 16 {
		f := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		norm += f * f
	}
	if math.Abs(norm-1) > 1e-5 || a.Usage.PromptTokens != 3 {
		t.Fatalf("base64 vector norm² %v, usage %+v", norm, a.Usage)
	}

	// Every input is a token at least: four one-letter inputs are 4
	// tokens (they were 1), as a text completion's four prompts are
	// (TestTextCompletionShapes).
	status, b, err = post(ctx, base+wire.PathEmbeddings, `{"input":["a","b","c","d"]}`)
	if err != nil || status != 200 || json.Unmarshal(b, &a) != nil || len(a.Data) != 4 || a.Usage.PromptTokens != 4 || a.Usage.TotalTokens != 4 {
		t.Fatalf("four short inputs: %d %s %v", status, b, err)
	}

	status, b, _ = post(ctx, base+wire.PathEmbeddings, `{"input":"a","dimensions":4097}`)
	if status != 400 || !strings.Contains(string(b), `"param":"dimensions"`) {
		t.Fatalf("dimensions 4097: %d %s", status, b)
	}
}
