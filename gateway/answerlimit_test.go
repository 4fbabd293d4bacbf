package gateway_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/internal/wire"
)

// TestEmbeddingsAnswerLimit: routes.embeddings.answer_limit_bytes caps the
// embeddings answer the gateway reads from a real fake model node. An
// answer within it is relayed; a longer one (more dimensions) is a 502
// upstream_error whose message names the setting and its value, counted
// once as an error. (Before, the cap was a fixed 32 MiB: the second answer
// was relayed whatever the setting.)
func TestEmbeddingsAnswerLimit(t *testing.T) {
	const limit = 4096
	s := startGateway(t, func(c *gateway.Config) { c.Routes.Embeddings.AnswerLimitBytes = limit }, startNode(t, quickKnobs()))

	status, _, b := post(t, s, wire.PathEmbeddings, `{"input":"hi","dimensions":8}`)
	if status != http.StatusOK || len(b) > limit {
		t.Fatalf("8 dimensions: %d, %d bytes %.200s; want 200 within %d bytes", status, len(b), b, limit)
	}
	status, h, b := post(t, s, wire.PathEmbeddings, `{"input":"hi","dimensions":2048}`)
	var e wire.ErrorBody
	_ = json.Unmarshal(b, &e)
	if status != http.StatusBadGateway || e.Error.Code != wire.CodeUpstreamError || h.Get(wire.HeaderOutcome) != wire.OutcomeError.String() ||
		!strings.Contains(e.Error.Message, "routes.embeddings.answer_limit_bytes (4096 bytes)") {
		t.Fatalf("2,048 dimensions: %d, %d bytes %.200s; want 502 %s naming routes.embeddings.answer_limit_bytes (4096 bytes)", status, len(b), b, wire.CodeUpstreamError)
	}
	// A relayed answer is counted once its last write ended: wait for it.
	if ok, bad := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": wire.RouteEmbeddings, "outcome": "ok"}, 1),
		waitMetric(t, s, wire.MetricRequests, map[string]string{"route": wire.RouteEmbeddings, "outcome": "error"}, 1); ok != 1 || bad != 1 {
		t.Errorf("embeddings counted ok %v, error %v; want 1 and 1", ok, bad)
	}
}

// TestEmbeddingsAnswerLimitConfig: the setting keeps the route's timeout
// when set alone, and a value outside [1, 1 GiB] (or not an integer) is
// refused naming the field and its line.
func TestEmbeddingsAnswerLimitConfig(t *testing.T) {
	const nodes = "upstream:\n  nodes: [\"127.0.0.1:9\"]\n"
	cfg, err := gateway.ParseConfig([]byte(nodes + "routes:\n  embeddings: {answer_limit_bytes: 100000000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := gateway.DefaultConfig().Routes.Embeddings
	if cfg.Routes.Embeddings.AnswerLimitBytes != 100000000 || cfg.Routes.Embeddings.Timeout != def.Timeout {
		t.Errorf("embeddings route %+v, want the limit set and the default timeout %s", cfg.Routes.Embeddings, def.Timeout)
	}
	if def.AnswerLimitBytes != 32<<20 {
		t.Errorf("default answer_limit_bytes %d, want 32 MiB", def.AnswerLimitBytes)
	}
	for _, tc := range []struct{ value, msg string }{
		{"0", "must be in [1, 1073741824] (got 0)"},
		{"-5", "(got -5)"},
		{"1073741825", "(got 1073741825)"},
		{"1.5", "got the number 1.5"},
		{"lots", "lots"},
	} {
		_, err := gateway.ParseConfig([]byte(nodes + "routes:\n  embeddings:\n    timeout: 30s\n    answer_limit_bytes: " + tc.value + "\n"))
		var ce *gateway.ConfigError
		if !errors.As(err, &ce) || ce.Line != 6 || !strings.Contains(err.Error(), tc.msg) ||
			(ce.Field != "" && ce.Field != "routes.embeddings.answer_limit_bytes") {
			t.Errorf("answer_limit_bytes %s: %v; want line 6, routes.embeddings.answer_limit_bytes, %q", tc.value, err, tc.msg)
		}
	}
}
