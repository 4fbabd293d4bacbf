package fakemodel_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/levee-lab/levee/fakemodel"
)

// TestOpenAIClient drives a fake model node with the official Go client
// (github.com/openai/openai-go/v3) over loopback: a plain answer (and its
// finish_reason), a stream with stream_options.include_usage, and errors
// that name the field in JSON terms.
func TestOpenAIClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k := fakemodel.DefaultKnobs()
	k.Latency.Dist, k.Latency.FixedMs = fakemodel.DistFixed, 1
	k.TTFTMs, k.TokensPerS, k.AnswerTokens = 1, 5000, 6
	n, err := fakemodel.NewNode(ln, fakemodel.WithKnobs(k), fakemodel.WithAdminToken("openai-client-test-token"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.Serve() }()
	t.Cleanup(func() { n.Close() })
	client := openai.NewClient(option.WithBaseURL("http://"+n.Addr()+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	chatParams := func(maxTokens int64) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{
			Model:     "levee-fake",
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("abcdefgh")},
			MaxTokens: openai.Int(maxTokens),
		}
	}

	for _, tc := range []struct {
		maxTokens      int64
		finish         string
		completion     int64
		promptExpected int64
	}{{4, "length", 4, 2}, {100, "stop", 6, 2}} {
		c, err := client.Chat.Completions.New(ctx, chatParams(tc.maxTokens))
		if err != nil {
			t.Fatalf("max_tokens %d: %v", tc.maxTokens, err)
		}
		if len(c.Choices) != 1 || c.Choices[0].FinishReason != tc.finish || c.Usage.CompletionTokens != tc.completion ||
			c.Usage.PromptTokens != tc.promptExpected || c.Choices[0].Message.Content == "" {
			t.Fatalf("max_tokens %d: %+v", tc.maxTokens, c)
		}
	}

	p := chatParams(3)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, p)
	var content strings.Builder
	var finish string
	var usage openai.CompletionUsage
	for stream.Next() {
		ch := stream.Current()
		for _, c := range ch.Choices {
			content.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
		if ch.JSON.Usage.Valid() && len(ch.Choices) == 0 {
			usage = ch.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if content.Len() == 0 || finish != "length" || usage.CompletionTokens != 3 || usage.TotalTokens != 5 {
		t.Fatalf("stream: content %q finish %q usage %+v", content.String(), finish, usage)
	}

	for _, tc := range []struct {
		opts  []option.RequestOption
		param string
		msg   string
	}{
		{[]option.RequestOption{option.WithJSONSet("max_tokens", 40000)}, "max_tokens", "must be an integer in [0, 32768], got 40000"},
		{[]option.RequestOption{option.WithJSONSet("max_tokens", "eight")}, "max_tokens", "must be an integer, got a JSON string"},
		{[]option.RequestOption{option.WithJSONSet("messages", "hi")}, "messages", "must be an array, got a JSON string"},
	} {
		_, err := client.Chat.Completions.New(ctx, chatParams(4), tc.opts...)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != tc.param || apiErr.Type != "invalid_request_error" ||
			!strings.Contains(apiErr.Message, tc.param) || !strings.Contains(apiErr.Message, tc.msg) {
			t.Errorf("%s: %v", tc.param, err)
		}
	}
}
