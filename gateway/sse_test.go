package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/jsonstrict"
	"github.com/levee-lab/levee/internal/wire"
)

// sseCases are streams as a model may send them, each with what a client
// that did not ask for usage must get: the same bytes without the usage
// chunk's event. Every case's usage totals 3 tokens.
var sseCases = map[string]struct{ stream, want string }{
	"vllm": {
		sseChunk + "\n\n" + sseUsage + "\n\ndata: [DONE]\n\n",
		sseChunk + "\n\ndata: [DONE]\n\n"},
	"crlf": {
		sseChunk + "\r\n\r\n" + sseUsage + "\r\n\r\ndata: [DONE]\r\n\r\n",
		sseChunk + "\r\n\r\ndata: [DONE]\r\n\r\n"},
	"comments": {
		": keep-alive\n\n" + sseChunk + "\n\n: ping\n\n" + sseUsage + "\n\ndata: [DONE]\n\n",
		": keep-alive\n\n" + sseChunk + "\n\n: ping\n\ndata: [DONE]\n\n"},
	"event line": {
		"event: message\n" + sseChunk + "\n\nevent: message\n" + sseUsage + "\n\ndata: [DONE]\n\n",
		"event: message\n" + sseChunk + "\n\ndata: [DONE]\n\n"},
	"id lines": {
		"id: 1\n" + sseChunk + "\n\nid: 2\n: usage\n" + sseUsage + "\n\nid: 3\ndata: [DONE]\n\n",
		"id: 1\n" + sseChunk + "\n\nid: 3\ndata: [DONE]\n\n"},
	"multi-line data": {
		sseChunk + "\n\ndata: {\"choices\":[],\ndata: \"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1,\"total_tokens\":3}}\n\ndata: [DONE]\n\n",
		sseChunk + "\n\ndata: [DONE]\n\n"},
	"no [DONE]": {
		sseChunk + "\n\n" + sseUsage + "\n\n",
		sseChunk + "\n\n"},
}

const (
	sseChunk = `data: {"choices":[{"index":0,"delta":{"content":"tok0 "},"finish_reason":null}]}`
	sseUsage = `data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`
)

// TestUsageEventDroppedWhole: the usage chunk the gateway asked for on a
// client's behalf is dropped as a whole event — its "event:", "id:" and
// comment lines, every line of a multi-line data field, its blank line —
// whatever the line endings; every other byte reaches the client as the
// model sent it; and the stream settles with that usage (3 tokens). Before,
// the relay dropped the usage line alone: an "event:" or "id:" line of the
// usage event was glued onto the next event ("event: message\ndata:
// [DONE]"), and a usage chunk whose data spanned lines was neither dropped
// nor read. A client that asked for usage gets the stream unchanged.
func TestUsageEventDroppedWhole(t *testing.T) {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		var req struct {
			Model string `json:"model"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		if !strings.Contains(string(b), `"include_usage":true`) {
			t.Errorf("%s: the gateway did not ask for usage: %s", req.Model, b)
		}
		_, _ = io.WriteString(w, sseCases[req.Model].stream)
	}))
	t.Cleanup(model.Close)
	s := startServer(t, testConfig(strings.TrimPrefix(model.URL, "http://")))
	url := "http://" + s.Addr() + "/v1/chat/completions"
	for name, tc := range sseCases {
		for _, asked := range []bool{false, true} {
			opts, want := "", tc.want
			if asked {
				opts, want = `"stream_options":{"include_usage":true},`, tc.stream
			}
			used := func() float64 {
				return counterSum(scrape(t, s), "levee_tokens_used_total", map[string]string{"priority": "P2"})
			}
			before := used()
			a := call(t, "POST", url, "k2", `{"model":"`+name+`","stream":true,`+opts+`"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`)
			if a.status != 200 || string(a.body) != want {
				t.Errorf("%s (usage asked %v): got %q\nwant %q", name, asked, a.body, want)
			}
			if got := used() - before; got != 3 {
				t.Errorf("%s (usage asked %v): settled %v tokens, want the usage chunk's 3", name, asked, got)
			}
		}
	}
}

// TestSSEEventLargerThanBuffer: an event longer than stream.buffer_bytes
// (a chunk with large logprobs) reaches the client whole, byte for byte,
// and the events around it too.
func TestSSEEventLargerThanBuffer(t *testing.T) {
	big := `data: {"choices":[{"delta":{"content":"` + strings.Repeat("x", 3000) + `"}}]}`
	stream := sseChunk + "\n\n" + big + "\r\n\r\n" + sseUsage + "\n\ndata: [DONE]\n\n"
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			_, _ = io.WriteString(w, stream)
		}
	}))
	t.Cleanup(model.Close)
	cfg := testConfig(strings.TrimPrefix(model.URL, "http://"))
	cfg.Stream.BufferBytes = 1024
	s := startServer(t, cfg)
	a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k2", `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if want := sseChunk + "\n\n" + big + "\r\n\r\ndata: [DONE]\n\n"; a.status != 200 || string(a.body) != want {
		t.Fatalf("got %v\nwant %q", a, want)
	}
}

// TestNullStreamOptionsNotDoubled: a client that sends "stream_options":
// null (clients that serialize every optional field, Jackson's default)
// gets its stream through a backend that refuses a name given twice, as
// serde-based servers (TGI) do. Before, the gateway read null as "not
// named" and spliced its own stream_options in front: the backend got the
// name twice and answered 422, which the client got.
func TestNullStreamOptionsNotDoubled(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		if err := jsonstrict.Check(b, &map[string]json.RawMessage{}); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"error":"Failed to deserialize the JSON body: duplicate field `+"`stream_options`"+`","error_type":"validation"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseChunk+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(model.Close)
	s := startServer(t, testConfig(strings.TrimPrefix(model.URL, "http://")))
	body := `{"model":"m","stream":true,"stream_options":null,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`
	a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k2", body)
	if want := sseChunk + "\n\ndata: [DONE]\n\n"; a.status != 200 || string(a.body) != want {
		t.Fatalf("got %v\nwant %q", a, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != body {
		t.Fatalf("the model got %q, want the client's body unchanged", got)
	}
}

// TestStreamWithoutUsageCountsEveryDelta: a model that sends no usage
// (one that ignores stream_options) is settled on the prompt's estimate
// plus one token per chunk that carried generated tokens — reasoning
// (vLLM's reasoning_content and reasoning) and a tool call's pieces as
// well as content. Here 1 + 2 reasoning + 2 tool call + 1 content
// chunks: 6. Before, only content counted: a reasoning model's or a tool
// call's stream settled at little more than its prompt.
func TestStreamWithoutUsageCountsEveryDelta(t *testing.T) {
	stream := `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":"Let"}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"reasoning":" me"}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"tool_calls"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, stream)
		}
	}))
	t.Cleanup(model.Close)
	s := startServer(t, testConfig(strings.TrimPrefix(model.URL, "http://")))
	a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k2", `{"model":"m","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"abcd"}]}`)
	if a.status != 200 || string(a.body) != stream {
		t.Fatalf("got %v", a)
	}
	if got := counterSum(scrape(t, s), "levee_tokens_used_total", map[string]string{"priority": "P2"}); got != 6 {
		t.Fatalf("settled %v tokens, want 6", got)
	}
}

// TestTTFTSkipsSSEComments: a model that sends SSE comments while the
// request waits (": PROCESSING", as OpenRouter does; vLLM's
// ": keep-alive") has not produced its first token yet. The time to first
// token — levee_stream_ttft_seconds, the limiter's latency signal, and
// the pool's time to first byte (levee_upstream_latency_seconds, which
// also sets attempt timeouts and hedge delays) — runs to the first data
// line. The model here waits between its comments and its first data
// line, and measures that wait: every TTFT is at least that long, as
// causality says. Before, the comment ended the TTFT and the one stream
// read as answered almost at once. The client still gets the comments.
// With more comments than the pool reads ahead (upstream.maxCommentAhead)
// the pool counts the answer as begun, and the relay still waits for the
// data line.
func TestTTFTSkipsSSEComments(t *testing.T) {
	many := strings.Repeat(": keep-alive\n\n", 70<<10/len(": keep-alive\n\n"))
	for _, tc := range []struct {
		name, first, second string
		metrics             []string
	}{
		{"openrouter and vllm", ": PROCESSING\n\n", ": keep-alive\r\n\r\n", []string{wire.MetricStreamTTFT, wire.MetricUpstreamLatency}},
		{"past the pool's read-ahead", many, ": keep-alive\n\n", []string{wire.MetricStreamTTFT}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const pause = 200 * time.Millisecond
			waited := make(chan time.Duration, 1)
			model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/healthz" {
					return
				}
				arrived := time.Now()
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tc.first)
				w.(http.Flusher).Flush()
				time.Sleep(pause / 2)
				_, _ = io.WriteString(w, tc.second)
				w.(http.Flusher).Flush()
				time.Sleep(pause / 2)
				waited <- time.Since(arrived)
				_, _ = io.WriteString(w, sseChunk+"\n\ndata: [DONE]\n\n")
			}))
			t.Cleanup(model.Close)
			s := startServer(t, testConfig(strings.TrimPrefix(model.URL, "http://")))
			a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k2", streamBody)
			if want := tc.first + tc.second + sseChunk + "\n\ndata: [DONE]\n\n"; a.status != 200 || string(a.body) != want {
				t.Fatalf("got status %d outcome %q, %d bytes; want 200 and the %d bytes the model sent", a.status, a.outcome, len(a.body), len(want))
			}
			gap := (<-waited).Seconds()
			fams := scrape(t, s)
			for _, name := range tc.metrics {
				f := fams[name]
				if f == nil || len(f.GetMetric()) != 1 {
					t.Fatalf("%s: no single histogram in %v", name, f)
				}
				h := f.GetMetric()[0].GetHistogram()
				if h.GetSampleCount() != 1 || h.GetSampleSum() < gap {
					t.Errorf("%s: %d samples summing %.4fs; want 1 of at least %.4fs, the model's wait before its first data line", name, h.GetSampleCount(), h.GetSampleSum(), gap)
				}
			}
		})
	}
}
