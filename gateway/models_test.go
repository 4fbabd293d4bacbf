package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

// TestModelsListed: GET /v1/models, which OpenAI clients call before
// anything else (Open WebUI when a connection is added: no list, no
// models to pick), answers a node's list through the gateway, counted as
// route "other". Before, it was a 404 "no route /v1/models".
func TestModelsListed(t *testing.T) {
	s := startGateway(t, nil, startNode(t, quickKnobs()))
	client := openai.NewClient(option.WithBaseURL("http://"+s.Addr()+"/v1/"), option.WithAPIKey("k1"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := client.Models.List(ctx)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != fakemodel.DefaultModel || page.Data[0].Object != "model" {
		t.Fatalf("models: %+v, %v", page, err)
	}
	if n := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": wire.RouteOther, "outcome": "ok"}, 1); n != 1 {
		t.Fatalf("counted %v ok requests of route other, want 1", n)
	}
}

// TestModelsDeadlineTooShortIsTimeout: a deadline the pool cannot meet
// (under upstream.min_service_time, so no call is sent) is a 504
// deadline_exceeded with outcome timeout on /v1/models, as on the model
// routes — not a 502 upstream_error. The deadline (30 s) is far from
// passing and min_service_time (1 min) far above it, so the pool always
// refuses before sending. Before the fix /v1/models answered 502.
func TestModelsDeadlineTooShortIsTimeout(t *testing.T) {
	s := startGateway(t, func(c *gateway.Config) { c.Upstream.MinServiceTime = time.Minute }, startNode(t, quickKnobs()))
	for _, path := range []string{wire.PathModels, wire.PathPredict} {
		method, body := http.MethodGet, ""
		if path == wire.PathPredict {
			method, body = http.MethodPost, `{"features":{"amount":1}}`
		}
		req, _ := http.NewRequest(method, "http://"+s.Addr()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k1")
		req.Header.Set(wire.HeaderDeadlineMs, "30000")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e wire.ErrorBody
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != http.StatusGatewayTimeout || e.Error.Code != wire.CodeDeadlineExceeded || resp.Header.Get(wire.HeaderOutcome) != wire.OutcomeTimeout.String() {
			t.Errorf("%s with a deadline under min_service_time: %d %s; want 504 %s", path, resp.StatusCode, b, wire.CodeDeadlineExceeded)
		}
	}
	if n := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": wire.RouteOther, "outcome": "timeout"}, 1); n != 1 {
		t.Errorf("counted %v timeouts of route other, want 1", n)
	}
}

// TestModelsListTooLarge: a node's model list over the gateway's 4 MiB
// cap on a non-streamed answer is a 502 upstream_error saying so, counted
// once as an error; one byte less is relayed whole. Before the fix the
// gateway relayed the first 4 MiB under the node's 200: a truncated JSON
// list counted ok.
func TestModelsListTooLarge(t *testing.T) {
	const limit = 4 << 20
	var size atomic.Int64
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.PathModels {
			return // health checks
		}
		n := int(size.Load())
		pad := n - len(`{"object":"list","data":[],"pad":""}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[],"pad":"`+strings.Repeat("x", pad)+`"}`)
	}))
	t.Cleanup(node.Close)
	s := startGateway(t, func(c *gateway.Config) { c.Upstream.Nodes = []string{strings.TrimPrefix(node.URL, "http://")} })
	get := func() (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr()+wire.PathModels, nil)
		req.Header.Set("Authorization", "Bearer k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	size.Store(limit)
	if status, b := get(); status != http.StatusOK || len(b) != limit || !json.Valid(b) {
		t.Fatalf("a list of exactly 4 MiB: %d, %d bytes (valid JSON %v); want 200 and all of it", status, len(b), json.Valid(b))
	}
	size.Store(limit + 1)
	status, b := get()
	var e wire.ErrorBody
	_ = json.Unmarshal(b, &e)
	if status != http.StatusBadGateway || e.Error.Code != wire.CodeUpstreamError || !strings.Contains(e.Error.Message, "exceeds 4194304 bytes") {
		t.Fatalf("a list of 4 MiB + 1: %d, %d bytes %.200s; want 502 %s saying it exceeds 4194304 bytes", status, len(b), b, wire.CodeUpstreamError)
	}
	if n := waitMetric(t, s, wire.MetricRequests, map[string]string{"route": wire.RouteOther, "outcome": "error"}, 1); n != 1 {
		t.Errorf("counted %v errors of route other, want 1", n)
	}
}

// TestModelsNeverLimitedOrAdmitted: GET /v1/models is route other, never
// limited or admitted (docs/CONTRACTS.md): with a rule of one request an
// hour on every route spent, it still answers, and admits nothing.
func TestModelsNeverLimitedOrAdmitted(t *testing.T) {
	s := startGateway(t, func(c *gateway.Config) {
		c.RateLimit.Rules = []gateway.RuleConfig{{Tenant: "*", Route: "*", Cost: gateway.CostRequests,
			Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 1, Window: time.Hour}}}
	}, startNode(t, quickKnobs()))
	post := func() string {
		resp, err := http.Post("http://"+s.Addr()+wire.PathPredict, "application/json", strings.NewReader(`{"features":{"amount":1}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get(wire.HeaderOutcome)
	}
	if o1, o2 := post(), post(); o1 != "ok" || o2 != "shed_ratelimit" {
		t.Fatalf("two predicts in the hour: %s, %s; want ok, shed_ratelimit", o1, o2)
	}
	for i := range 3 {
		resp, err := http.Get("http://" + s.Addr() + wire.PathModels)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get(wire.HeaderOutcome) != "ok" {
			t.Fatalf("models %d with the hour spent: %s %q", i, resp.Status, resp.Header.Get(wire.HeaderOutcome))
		}
	}
	if n := metric(t, s, wire.MetricAdmitted, nil); n != 1 {
		t.Errorf("%s = %v after a predict and 3 model lists, want 1", wire.MetricAdmitted, n)
	}
}
