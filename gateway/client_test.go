package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/internal/wire"
)

const clientTestToken = "client-test-admin-token"

// startNode serves a real fake model node on loopback with knobs k.
func startNode(t *testing.T, k fakemodel.Knobs) *fakemodel.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := fakemodel.NewNode(ln, fakemodel.WithKnobs(k), fakemodel.WithAdminToken(clientTestToken))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.Serve() }()
	t.Cleanup(func() { n.Close() })
	return n
}

// quickKnobs answer at once: 1 ms service, 1 ms to the first token.
func quickKnobs() fakemodel.Knobs {
	k := fakemodel.DefaultKnobs()
	k.Latency.Dist, k.Latency.FixedMs = fakemodel.DistFixed, 1
	k.TTFTMs, k.TokensPerS = 1, 5000
	return k
}

// startGateway serves a gateway in front of nodes, with API keys k0
// (P0), k1 (P1); anonymous callers are P2.
func startGateway(t *testing.T, edit func(*gateway.Config), nodes ...*fakemodel.Node) *gateway.Server {
	t.Helper()
	cfg := gateway.DefaultConfig()
	cfg.Listen, cfg.Admin = "127.0.0.1:0", "127.0.0.1:0"
	for _, n := range nodes {
		cfg.Upstream.Nodes = append(cfg.Upstream.Nodes, n.Addr())
	}
	cfg.Keys = []gateway.KeyConfig{{Key: "k0", Tenant: "trade", Priority: "P0"}, {Key: "k1", Tenant: "web", Priority: "P1"}}
	// Tests judge the budget, not the machine: no gateway-runtime watermarks.
	cfg.Guard.LagProbeP99Ms, cfg.Guard.SchedLatencyP99Ms = gateway.Watermarks{}, gateway.Watermarks{}
	cfg.Guard.GCPauseP99Ms, cfg.Guard.HeapMB = gateway.Watermarks{}, gateway.Watermarks{}
	cfg.Guard.UpstreamLatencyRatio = gateway.Watermarks{}
	cfg.Upstream.HealthInterval = 2 * time.Second
	if edit != nil {
		edit(&cfg)
	}
	s, err := gateway.Start(context.Background(), cfg, clientTestToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

// metric sums a gateway metric's series whose labels include want.
func metric(t *testing.T, s *gateway.Server, name string, want map[string]string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + wire.PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				found = found || (l.GetName() == k && l.GetValue() == v)
			}
			if !found {
				continue next
			}
		}
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum
}

// TestOpenAIClientThroughGateway: the official Go client against the
// gateway in front of a real fake model node: a plain answer with its
// finish_reason and usage, a stream with include_usage (relayed), a
// stream without (the gateway asks for the usage itself and keeps the
// chunk from the client, yet settles exactly), and errors naming the
// field in JSON terms — the gateway's own 400s and its sheds.
func TestOpenAIClientThroughGateway(t *testing.T) {
	k := quickKnobs()
	k.AnswerTokens = 6
	s := startGateway(t, nil, startNode(t, k))
	client := openai.NewClient(option.WithBaseURL("http://"+s.Addr()+"/v1/"), option.WithAPIKey("k0"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := func(maxTokens int64) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: "m", MaxTokens: openai.Int(maxTokens),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("abcdefgh")}}
	}
	c, err := client.Chat.Completions.New(ctx, params(4))
	if err != nil || c.Choices[0].FinishReason != "length" || c.Usage.TotalTokens != 6 {
		t.Fatalf("cut answer: %+v, %v", c, err)
	}
	c, err = client.Chat.Completions.New(ctx, params(100))
	if err != nil || c.Choices[0].FinishReason != "stop" || c.Usage.TotalTokens != 8 {
		t.Fatalf("whole answer: %+v, %v", c, err)
	}
	// Settled with the usage: 6 + 8 used of (2+4) + (2+100) reserved.
	if used, res := metric(t, s, wire.MetricTokensUsed, map[string]string{"priority": "P0"}), metric(t, s, wire.MetricTokensReserved, map[string]string{"priority": "P0"}); used != 14 || res != 108 {
		t.Fatalf("tokens used %v reserved %v, want 14 and 108", used, res)
	}

	for _, include := range []bool{true, false} {
		p := params(3)
		if include {
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		}
		before := metric(t, s, wire.MetricTokensUsed, nil)
		stream := client.Chat.Completions.NewStreaming(ctx, p)
		var usageChunks int
		var finish string
		for stream.Next() {
			ch := stream.Current()
			if len(ch.Choices) == 0 && ch.JSON.Usage.Valid() {
				usageChunks++
				if ch.Usage.TotalTokens != 5 {
					t.Errorf("usage chunk %+v", ch.Usage)
				}
			}
			for _, c := range ch.Choices {
				if c.FinishReason != "" {
					finish = c.FinishReason
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[include]; usageChunks != want || finish != "length" {
			t.Fatalf("include_usage %v: %d usage chunks (want %d), finish %q", include, usageChunks, want, finish)
		}
		// The client stops at [DONE]; the gateway settles as the handler ends.
		if got := waitMetric(t, s, wire.MetricTokensUsed, nil, before+5) - before; got != 5 {
			t.Fatalf("include_usage %v: settled %v tokens, want the stream's exact 5", include, got)
		}
	}

	for _, tc := range []struct {
		opts          []option.RequestOption
		status        int
		param, substr string
	}{
		{[]option.RequestOption{option.WithJSONSet("max_tokens", 40000)}, 400, "max_tokens", "[0, 32768]"},
		{[]option.RequestOption{option.WithJSONSet("max_tokens", "eight")}, 400, "max_tokens", "must be an integer, got a JSON string"},
		{[]option.RequestOption{option.WithJSONSet("messages", "hi")}, 400, "messages", "must be an array, got a JSON string"},
		{[]option.RequestOption{option.WithJSONSet("stream_options", []int{1})}, 400, "stream_options", "must be an object, got a JSON array"},
	} {
		_, err := client.Chat.Completions.New(ctx, params(4), tc.opts...)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Param != tc.param ||
			!strings.Contains(apiErr.Message, tc.param+": ") || !strings.Contains(apiErr.Message, tc.substr) || strings.Contains(apiErr.Message, "json.") {
			t.Errorf("%s: %v", tc.param, err)
		}
	}
	// A shed speaks OpenAI too: 503 with a server_error type.
	adm, _ := http.NewRequest(http.MethodPut, "http://"+s.AdminAddr()+wire.PathAdminLevel, strings.NewReader(`{"level":"red"}`))
	adm.Header.Set("Authorization", "Bearer "+clientTestToken)
	if resp, err := http.DefaultClient.Do(adm); err != nil || resp.StatusCode != 200 {
		t.Fatalf("pin red: %v", err)
	}
	p1 := openai.NewClient(option.WithBaseURL("http://"+s.Addr()+"/v1/"), option.WithAPIKey("k1"), option.WithMaxRetries(0))
	_, err = p1.Chat.Completions.New(ctx, params(4))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Type != "server_error" || !strings.Contains(apiErr.Message, "red") {
		t.Errorf("P1 at red: %v", err)
	}
}

// waitMetric polls the sum of a metric's series whose labels include
// labels until it reaches want (at most 5 s) and returns its last value.
// The gateway counts an outcome after the answer's last byte is written, so
// a client can be done before its request is counted.
func waitMetric(t *testing.T, s *gateway.Server, name string, labels map[string]string, want float64) float64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v := metric(t, s, name, labels)
		if v >= want || time.Now().After(deadline) {
			return v
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readSSE reads an SSE body to its end and returns its data lines.
func readSSE(resp *http.Response) []string {
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	return data
}

// TestOneMaxTokensLimit: the gateway and the fake model agree on the
// largest max_tokens (openai.MaxTokens, 32768). The limit itself passes
// the gateway and is answered by the node behind it, straight or relayed;
// one more is a 400 naming max_tokens from both. (Before issue 12 the
// gateway passed up to 32768 and the node refused anything above 4096, so
// the limit came back as the node's 400 relayed.)
func TestOneMaxTokensLimit(t *testing.T) {
	k := quickKnobs()
	k.AnswerTokens = 4 // a natural answer of 4 tokens: the limit costs no time
	node := startNode(t, k)
	s := startGateway(t, nil, node)
	body := func(n int) string {
		return fmt.Sprintf(`{"model":"m","max_tokens":%d,"messages":[{"role":"user","content":"abcd"}]}`, n)
	}
	for _, base := range []string{"http://" + s.Addr(), "http://" + node.Addr()} {
		for _, tc := range []struct {
			maxTokens, status int
		}{{gateway.MaxMaxTokens, 200}, {gateway.MaxMaxTokens + 1, 400}} {
			req, _ := http.NewRequest(http.MethodPost, base+wire.PathChat, strings.NewReader(body(tc.maxTokens)))
			req.Header.Set("Authorization", "Bearer k0")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e wire.ErrorBody
			switch {
			case resp.StatusCode != tc.status:
				t.Errorf("%s max_tokens %d: %s %s, want %d", base, tc.maxTokens, resp.Status, b, tc.status)
			case tc.status == 400 && (json.Unmarshal(b, &e) != nil || e.Error.Param != "max_tokens"):
				t.Errorf("%s max_tokens %d: %s, want an error naming max_tokens", base, tc.maxTokens, b)
			}
		}
	}
	if gateway.MaxMaxTokens != fakemodel.MaxCompletionTokens {
		t.Errorf("gateway limit %d, fake model limit %d", gateway.MaxMaxTokens, fakemodel.MaxCompletionTokens)
	}
}
