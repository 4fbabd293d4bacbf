package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/internal/wire"
)

// post sends body to the gateway's path with key k0 and returns the
// answer's status, outcome header and body.
func post(t *testing.T, s *gateway.Server, path, body string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// TestCompletionsAndEmbeddingsThroughGateway: the official Go client
// against the gateway in front of a real fake model node, on the legacy
// completions route (plain, several prompts × n, and streamed) and on
// embeddings. Each request reserves its honest estimate — the prompts'
// tokens plus max_tokens for every sequence; an embedding its inputs
// only — settles with the usage the node reported (a stream's usage chunk
// the gateway asked for and kept from the client), and is counted once
// under its own route.
func TestCompletionsAndEmbeddingsThroughGateway(t *testing.T) {
	k := quickKnobs()
	k.AnswerTokens = 100 // answers run to max_tokens
	s := startGateway(t, nil, startNode(t, k))
	client := openai.NewClient(option.WithBaseURL("http://"+s.Addr()+"/v1/"), option.WithAPIKey("k0"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p0 := map[string]string{"priority": "P0"}

	// Two prompts of 4 characters (1 token each), n 2, max_tokens 3:
	// reserved 2 + 3 × 4 sequences = 14; the node reports the same.
	c, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model: "m", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{"abcd", "efgh"}},
		MaxTokens: openai.Int(3), N: openai.Int(2),
	})
	if err != nil || len(c.Choices) != 4 || c.Choices[3].Text == "" || c.Choices[0].FinishReason != "length" || c.Usage.TotalTokens != 14 {
		t.Fatalf("completion: %+v, %v", c, err)
	}
	if res, used := metric(t, s, wire.MetricTokensReserved, p0), metric(t, s, wire.MetricTokensUsed, p0); res != 14 || used != 14 {
		t.Fatalf("reserved %v used %v, want 14 and 14", res, used)
	}

	// Streamed: the text arrives chunk by chunk, no usage chunk reaches
	// a client that did not ask, and the gateway settles on the exact
	// usage (2 prompt + 5).
	before := metric(t, s, wire.MetricTokensUsed, p0)
	stream := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model: "m", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("abcdefgh")}, MaxTokens: openai.Int(5),
	})
	var text strings.Builder
	var chunks, usageChunks int
	for stream.Next() {
		ch := stream.Current()
		chunks++
		if ch.JSON.Usage.Valid() {
			usageChunks++
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Text)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 5 || usageChunks != 0 || len(strings.Fields(text.String())) != 5 {
		t.Fatalf("stream: %d chunks, %d usage chunks, text %q", chunks, usageChunks, text.String())
	}
	if got := waitMetric(t, s, wire.MetricTokensUsed, nil, before+7) - before; got != 7 {
		t.Fatalf("stream settled %v tokens, want 7", got)
	}

	// Embeddings: three inputs of 8 characters, 2 tokens each: 6
	// reserved, 6 used, no completion.
	resBefore := metric(t, s, wire.MetricTokensReserved, p0)
	e, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "m", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"abcdefgh", "ijklmnop", "qrstuvwx"}},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil || len(e.Data) != 3 || len(e.Data[2].Embedding) == 0 || e.Usage.PromptTokens != 6 {
		t.Fatalf("embeddings: %+v, %v", e, err)
	}
	if res := metric(t, s, wire.MetricTokensReserved, p0) - resBefore; res != 6 {
		t.Fatalf("embeddings reserved %v, want 6", res)
	}

	for route, want := range map[string]float64{wire.RouteCompletions: 2, wire.RouteEmbeddings: 1, wire.RouteChat: 0} {
		if got := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": route, "outcome": "ok"}, want); got != want {
			t.Errorf("route %s: %v ok, want %v", route, got, want)
		}
	}
	if got := metric(t, s, wire.MetricAdmitted, map[string]string{"class": wire.ClassAI}); got != 3 {
		t.Errorf("ai class admitted %v, want 3 (completions and embeddings share the model's bulkhead)", got)
	}
}

// TestCompletionsBadBodies: bad completions and embeddings bodies are a
// 400 naming the field, from the gateway (counted once as an error under
// the route, never sent on) and from the fake model alike.
func TestCompletionsBadBodies(t *testing.T) {
	node := startNode(t, quickKnobs())
	s := startGateway(t, nil, node)
	many := `"` + strings.Repeat(`a","`, fakeInputs) + `a"`
	for _, tc := range []struct {
		path, body, field, substr string
	}{
		{wire.PathCompletions, `{"model":"m"}`, "prompt", "is required"},
		{wire.PathCompletions, `{"prompt":""}`, "prompt", "non-empty string"},
		{wire.PathCompletions, `{"prompt":[]}`, "prompt", "non-empty"},
		{wire.PathCompletions, `{"prompt":7}`, "prompt", "non-empty string, array of strings"},
		{wire.PathCompletions, `{"prompt":["a",""]}`, "prompt[1]", "non-empty string"},
		{wire.PathCompletions, `{"prompt":[1,"a"]}`, "prompt", "array of token ids"},
		{wire.PathCompletions, `{"prompt":[[1,2],[]]}`, "prompt[1]", "non-empty array of token ids"},
		{wire.PathCompletions, `{"prompt":"a","max_tokens":"8"}`, "max_tokens", "must be an integer, got a JSON string"},
		{wire.PathCompletions, `{"prompt":"a","max_tokens":40000}`, "max_tokens", "[0, 32768]"},
		{wire.PathCompletions, `{"prompt":"a","n":0}`, "n", "[1, 128], got 0"},
		{wire.PathCompletions, `{"prompt":"a","n":129}`, "n", "[1, 128], got 129"},
		{wire.PathCompletions, `{"prompt":"a","n":3,"best_of":2}`, "best_of", "[n, 128] (n is 3), got 2"},
		{wire.PathCompletions, `{"prompt":"a","best_of":2,"stream":true}`, "best_of", "stream"},
		{wire.PathCompletions, `{"prompt":"a","stream":"yes"}`, "stream", "must be a boolean"},
		{wire.PathCompletions, `["a"]`, "", "must be a JSON object"},
		{wire.PathEmbeddings, `{"model":"m"}`, "input", "is required"},
		{wire.PathEmbeddings, `{"input":""}`, "input", "non-empty string"},
		{wire.PathEmbeddings, `{"input":[]}`, "input", "non-empty"},
		{wire.PathEmbeddings, `{"input":{"text":"a"}}`, "input", "non-empty string, array of strings"},
		{wire.PathEmbeddings, `{"input":["a",""]}`, "input[1]", "non-empty string"},
		{wire.PathEmbeddings, `{"input":"a","encoding_format":"hex"}`, "encoding_format", `"float" or "base64"`},
		{wire.PathEmbeddings, `{"input":"a","dimensions":0}`, "dimensions", "≥ 1"},
		{wire.PathEmbeddings, `{"input":[` + many + `]}`, "input", "at most 2048 inputs, got 2049"},
	} {
		for _, target := range []string{"gateway", "node"} {
			var status int
			var b []byte
			if target == "gateway" {
				status, _, b = post(t, s, tc.path, tc.body)
			} else {
				resp, err := http.Post("http://"+node.Addr()+tc.path, "application/json", strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				status = resp.StatusCode
				b, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			var e wire.ErrorBody
			if status != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Error.Param != tc.field || !strings.Contains(e.Error.Message, tc.substr) {
				t.Errorf("%s %s %.60s: %d %s, want 400 naming %q with %q", target, tc.path, tc.body, status, b, tc.field, tc.substr)
			}
		}
	}
	if got := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": wire.RouteCompletions, "outcome": "error"}, 15); got != 15 {
		t.Errorf("completions errors counted %v, want 15", got)
	}
	if got := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": wire.RouteEmbeddings, "outcome": "error"}, 8); got != 8 {
		t.Errorf("embeddings errors counted %v, want 8", got)
	}
	if got := metric(t, s, wire.MetricAdmitted, nil); got != 0 {
		t.Errorf("%v admitted, want none", got)
	}
}

// fakeInputs is openai.MaxEmbeddingInputs (internal/openai's): the bad
// batch holds one input more.
const fakeInputs = 2048

// TestCompletionsShedWithoutFallback: at level black with the fallback
// defense on, chat gets its static fallback but completions and
// embeddings are shed (503, shed_overload, no X-Levee-Fallback): a made-up
// completion or vector would be taken for the model's by the programs
// that call them.
func TestCompletionsShedWithoutFallback(t *testing.T) {
	s := startGateway(t, nil, startNode(t, quickKnobs()))
	adm, _ := http.NewRequest(http.MethodPut, "http://"+s.AdminAddr()+wire.PathAdminLevel, strings.NewReader(`{"level":"black"}`))
	adm.Header.Set("Authorization", "Bearer "+clientTestToken)
	resp, err := http.DefaultClient.Do(adm)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pin black: %v %v", resp, err)
	}
	resp.Body.Close()
	if status, h, b := post(t, s, wire.PathChat, `{"messages":[{"role":"user","content":"hi"}]}`); status != 200 || h.Get(wire.HeaderFallback) != "true" {
		t.Fatalf("chat at black: %d %s, want the fallback", status, b)
	}
	for _, tc := range []struct{ path, body string }{
		{wire.PathCompletions, `{"prompt":"hi"}`},
		{wire.PathCompletions, `{"prompt":"hi","stream":true}`},
		{wire.PathEmbeddings, `{"input":"hi"}`},
	} {
		status, h, b := post(t, s, tc.path, tc.body)
		if status != http.StatusServiceUnavailable || h.Get(wire.HeaderOutcome) != wire.OutcomeShedOverload.String() || h.Get(wire.HeaderFallback) != "" {
			t.Errorf("%s %s at black: %d %v %s, want 503 shed_overload without fallback", tc.path, tc.body, status, h, b)
		}
	}
	for _, route := range []string{wire.RouteCompletions, wire.RouteEmbeddings} {
		if got := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": route, "outcome": "shed_overload"}, 1); got == 0 {
			t.Errorf("route %s: no shed_overload counted", route)
		}
		if got := metric(t, s, wire.MetricFallbacks, map[string]string{"route": route}); got != 0 {
			t.Errorf("route %s: %v fallbacks", route, got)
		}
	}
}

// TestCompletionsTokenRateLimit: a token-cost rule on the completions
// route charges the estimate — max_tokens for every sequence (prompts ×
// best_of) — so a request that asks for 4 sequences of 3 tokens passes
// a bucket of 20 once (13 tokens) and is refused the second time (429),
// where a count of max_tokens alone (4) would have passed both.
func TestCompletionsTokenRateLimit(t *testing.T) {
	k := quickKnobs()
	k.AnswerTokens = 100
	s := startGateway(t, func(c *gateway.Config) {
		c.RateLimit.Rules = []gateway.RuleConfig{{Tenant: "*", Route: wire.RouteCompletions, Cost: gateway.CostTokens}}
		c.RateLimit.Rules[0].Algorithm = "token_bucket"
		c.RateLimit.Rules[0].ReplenishRate = 0.001
		c.RateLimit.Rules[0].Burst = 20
	}, startNode(t, k))
	body := `{"prompt":"abcd","max_tokens":3,"n":2,"best_of":4}`
	if status, _, b := post(t, s, wire.PathCompletions, body); status != 200 {
		t.Fatalf("first: %d %s", status, b)
	}
	status, h, b := post(t, s, wire.PathCompletions, body)
	if status != http.StatusTooManyRequests || h.Get(wire.HeaderOutcome) != wire.OutcomeShedRateLimit.String() {
		t.Fatalf("second: %d %s, want 429 shed_ratelimit", status, b)
	}
	if got := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": wire.RouteCompletions}, 2); got != 2 {
		t.Errorf("%v counted, want 2", got)
	}
}

// TestCompletionsUpstreamFailureIsAnError: when every node fails (500),
// chat falls back to its static answer but completions (plain and
// streamed) and embeddings answer 502 with outcome error: no made-up
// text or vector.
func TestCompletionsUpstreamFailureIsAnError(t *testing.T) {
	k := quickKnobs()
	k.ErrorRate = 1
	s := startGateway(t, nil, startNode(t, k))
	if status, h, b := post(t, s, wire.PathChat, `{"messages":[{"role":"user","content":"hi"}]}`); status != 200 || h.Get(wire.HeaderFallback) != "true" {
		t.Fatalf("chat with a failing node: %d %s, want the fallback", status, b)
	}
	for _, tc := range []struct{ path, body string }{
		{wire.PathCompletions, `{"prompt":"hi"}`},
		{wire.PathCompletions, `{"prompt":"hi","stream":true}`},
		{wire.PathEmbeddings, `{"input":"hi"}`},
	} {
		status, h, b := post(t, s, tc.path, tc.body)
		if status != http.StatusBadGateway || h.Get(wire.HeaderOutcome) != wire.OutcomeError.String() || h.Get(wire.HeaderFallback) != "" {
			t.Errorf("%s %s with a failing node: %d %v %s, want 502 error without fallback", tc.path, tc.body, status, h, b)
		}
	}
	for _, route := range []string{wire.RouteCompletions, wire.RouteEmbeddings} {
		if got := metric(t, s, wire.MetricFallbacks, map[string]string{"route": route}); got != 0 {
			t.Errorf("route %s: %v fallbacks", route, got)
		}
	}
}
