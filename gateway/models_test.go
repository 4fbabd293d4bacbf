package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/levee-lab/levee/fakemodel"
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
