package openai

import (
	"encoding/json"
	"github.com/levee-lab/levee/internal/allocs"
	"testing"
)

// chunkCases are stream chunks of the usual shape and of every shape the
// scanner must leave to encoding/json.
var chunkCases = []string{
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}`,
	`{"choices":[{"delta":{"role":"assistant","content":""}}]}`,
	`{"choices":[{"delta":{"content":null,"reasoning_content":"hm"}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a"}}]}}]}`,
	`{"choices":[{"delta":{"content":"","tool_calls":[],"reasoning":null,"refusal":{}}}]}`,
	`{"choices":[{"delta":{"tool_calls":[ ]}}]}`,
	`{"choices":[{"delta":{}},{"delta":{"content":"b"}}]}`,
	`{"choices":[{"index":0,"text":"the ","finish_reason":null}]}`,
	`{"choices":[{"text":""},{"text":null}]}`,
	`{"choices":[{"text":7}]}`,
	`{"choices":[]}`, `{}`, `{"choices":null}`, `{"choices":{}}`, `{"choices":[1]}`, `{"choices":[null]}`,
	`{"choices":[{"delta":null}]}`, `{"choices":[{"delta":"x"}]}`, `{"choices":[{"delta":[]}]}`,
	`{"Choices":[{"delta":{"content":"a"}}]}`, `{"choices":[{"Delta":{"content":"a"}}]}`, `{"choices":[{"delta":{"CONTENT":"a"}}]}`,
	`{"cho\u0069ces":[{"delta":{"content":"a"}}]}`, `{"choices":[{"delta":{"con\u0074ent":"a"}}]}`,
	`{"choices":[{"delta":{"content\u212a":"a"}}]}`, `{"choices":[{"delta":{"\u017fontent":"a"}}]}`,
	"{\"choices\":[{\"delta\":{\"tool_calls\u212a\":\"a\",\"toolcall\u017f\":1}}]}",
	`{"choices":[{"delta":{"content":"a"}}],"choices":[]}`, `{"choices":[{"delta":{},"delta":{"content":"a"}}]}`,
	`{"choices":[{"delta":{"content":"a","content":""}}]}`, `{"choices":[{"text":"a","text":""}]}`,
	`{"choices":[{"delta":{"content":"a"}}],"usage":null}`, `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
	`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":1.5}}`, `{"Usage":{"total_tokens":3}}`,
	`{"x":{"choices":[{"delta":{"content":"a"}}]},"y":["]",{"}":"{"}],"z":"\"}","choices":[{"delta":{"content":"\\"}}]}`,
	` { "choices" : [ { "delta" : { "content" : "a" } , "x" : [ 1 , 2 ] } ] , "n" : -1.5e3 , "t" : true } `,
	`{"choices":[{"delta":{"content":"é"},"é":1}],"ключ":{}}`,
}

// TestChunkScannerMatchesDecoding: wherever the scanner reads a chunk, it
// finds what encoding/json's decoding finds, and it reads the usual
// shapes itself.
func TestChunkScannerMatchesDecoding(t *testing.T) {
	handled := 0
	for _, c := range chunkCases {
		if !json.Valid([]byte(c)) {
			t.Fatalf("case %s is not JSON", c)
		}
		if checkChunkScanner(t, []byte(c)) {
			handled++
		}
	}
	if handled < 12 {
		t.Errorf("the scanner read %d of the cases, want the usual shapes (12 at least)", handled)
	}
	for _, c := range chunkCases[:3] {
		if _, ok := chunkGenerated([]byte(c)); !ok {
			t.Errorf("the usual chunk %s was left to encoding/json", c)
		}
	}
}

// checkChunkScanner compares the scanner with the decoding on one valid
// chunk; it reports whether the scanner read it.
func checkChunkScanner(t *testing.T, data []byte) bool {
	t.Helper()
	gen, ok := chunkGenerated(data)
	if !ok {
		return false
	}
	var m StreamMeter
	usageOnly := m.decode(data)
	if _, has := m.Usage(); usageOnly || has || m.Failed() || gen != (m.Chunks() == 1) {
		t.Errorf("%s: scanner says generated %v, decoding counted %d chunks (usage %v, usage-only %v)", data, gen, m.Chunks(), has, usageOnly)
	}
	return true
}

// FuzzChunkScanner: on any valid JSON object the scanner either leaves
// the chunk to encoding/json or agrees with it.
func FuzzChunkScanner(f *testing.F) {
	for _, c := range chunkCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
			return
		}
		checkChunkScanner(t, data)
	})
}

// TestStreamMeterUsualChunkDoesNotAllocate: a token's chunk is metered
// without allocating — under the race detector too, as CI runs it (it
// skipped there, so CI never checked it).
func TestStreamMeterUsualChunkDoesNotAllocate(t *testing.T) {
	var m StreamMeter
	data := []byte(chunkCases[0])
	if n := allocs.Total(1000, func() { m.Event(data) }); n != 0 {
		t.Errorf("Event allocated %d times in 1,000 chunks", n)
	}
	if m.Chunks() == 0 {
		t.Fatal("not counted")
	}
}

// TestStreamMeterFailed: an event with a top-level error object (vLLM,
// llama.cpp's server, OpenAI mid-stream) marks the stream failed, also
// beside choices the scanner would otherwise read; a null or empty one
// does not.
func TestStreamMeterFailed(t *testing.T) {
	for data, want := range map[string]bool{
		`{"error":{"message":"The decoder prompt is too long","type":"BadRequestError","code":400}}`: true,
		`{"choices":[{"index":0,"delta":{"content":"a"}}],"error":{"message":"x"}}`:                  true,
		`{"error":"engine dead"}`: true,
		`{"choices":[{"index":0,"delta":{"content":"a"}}],"error":null}`: false,
		`{"choices":[{"index":0,"delta":{"content":"a"}}]}`:              false,
		`{"error":""}`: false,
		`[DONE]`:       false,
	} {
		var m StreamMeter
		m.Event([]byte(data))
		if m.Failed() != want {
			t.Errorf("%s: Failed %v, want %v", data, m.Failed(), want)
		}
	}
}
