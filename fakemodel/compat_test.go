package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestFinishReason: an answer cut by max_tokens says "length"; one that
// ends on its own within max_tokens says "stop" (OpenAI's contract).
func TestFinishReason(t *testing.T) {
	k := fixedKnobs(1, 4, OverflowQueue)
	k.AnswerTokens = 6
	_, url := startNode(t, k)
	for _, tt := range []struct {
		body   string
		finish string
		tokens int
	}{
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`, FinishLength, 4},
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":6}`, FinishStop, 6},
		{`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":100}`, FinishStop, 6},
		{`{"messages":[{"role":"user","content":"hi"}]}`, FinishStop, 6}, // default cap 16
		// A body with a UTF-8 byte order mark (curl -d @file of a file
		// Windows PowerShell wrote) is read as vLLM reads it.
		{"\xef\xbb\xbf" + `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`, FinishLength, 4},
	} {
		code, body, err := post(context.Background(), url+wire.PathChat, tt.body)
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %s %v", tt.body, code, body, err)
		}
		var c Completion
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].FinishReason != tt.finish || c.Usage.CompletionTokens != tt.tokens {
			t.Errorf("%s: finish %q, %d tokens; want %q, %d", tt.body, c.Choices[0].FinishReason, c.Usage.CompletionTokens, tt.finish, tt.tokens)
		}
	}
}

// streamEvents reads an SSE answer's data payloads.
func streamEvents(t *testing.T, url, body string) (data []string, hdr http.Header) {
	t.Helper()
	resp, err := testClient.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	return data, resp.Header
}

// TestStreamIncludeUsage: with stream_options.include_usage the stream
// ends with a chunk of no choices carrying the usage; without it, no such
// chunk. The last content chunk's finish_reason says why it ended.
func TestStreamIncludeUsage(t *testing.T) {
	k := fixedKnobs(1, 4, OverflowQueue)
	k.TTFTMs, k.TokensPerS, k.AnswerTokens = 1, 10000, 0
	_, url := startNode(t, k)
	const base = `{"stream":true,"max_tokens":3,"messages":[{"role":"user","content":"abcdefgh"}]`
	for _, withUsage := range []bool{true, false} {
		body := base + "}"
		if withUsage {
			body = base + `,"stream_options":{"include_usage":true}}`
		}
		data, _ := streamEvents(t, url+wire.PathChat, body)
		if len(data) < 2 || data[len(data)-1] != "[DONE]" {
			t.Fatalf("stream %v does not end with [DONE]", data)
		}
		var last struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *Usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data[len(data)-2]), &last); err != nil {
			t.Fatal(err)
		}
		if withUsage {
			if last.Usage == nil || len(last.Choices) != 0 || *last.Usage != (Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}) {
				t.Fatalf("usage chunk %s", data[len(data)-2])
			}
			if err := json.Unmarshal([]byte(data[len(data)-3]), &last); err != nil || *last.Choices[0].FinishReason != FinishLength {
				t.Fatalf("finish chunk %s", data[len(data)-3])
			}
			continue
		}
		if last.Usage != nil || len(last.Choices) != 1 || *last.Choices[0].FinishReason != FinishLength {
			t.Fatalf("last chunk without include_usage: %s", data[len(data)-2])
		}
	}
}

// TestBackpressureSignal: the node sends X-Levee-Backpressure while one of
// its watermarks is met (here the queue, and the force switch), and not
// otherwise.
func TestBackpressureSignal(t *testing.T) {
	n, url := startNode(t, fixedKnobs(1, 4, OverflowQueue))
	get := func() string {
		resp, err := testClient.Post(url+wire.PathChat, "application/json", strings.NewReader(chatBody))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get(wire.HeaderBackpressure)
	}
	if h := get(); h != "" {
		t.Fatalf("idle node signals %q", h)
	}
	if _, err := n.PatchKnobs([]byte(`{"backpressure_force":true}`)); err != nil {
		t.Fatal(err)
	}
	if h := get(); h != wire.BackpressureForce {
		t.Fatalf("forced node signals %q", h)
	}
	// A queue watermark of 1 with one slot held by a request that waits
	// on a second: the second waits in the queue, so the first... simpler:
	// a watermark the idle node meets trivially is not possible (≥ 1), so
	// check the reasons function with a queue built by hand.
	if _, err := n.PatchKnobs([]byte(`{"backpressure_force":false,"backpressure_queue":1,"slots":1,"latency":{"fixed_ms":300}}`)); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 3)
	for range 3 {
		go func() { done <- get() }()
	}
	waitFor(t, "a queued request", func() bool { _, q, _ := n.slots.state(); return q >= 1 })
	var signalled int
	for range 3 {
		if <-done == wire.BackpressureQueue {
			signalled++
		}
	}
	if signalled == 0 {
		t.Fatal("no answer carried the queue signal while requests queued")
	}
	if h := get(); h != "" {
		t.Fatalf("drained node still signals %q", h)
	}
}
