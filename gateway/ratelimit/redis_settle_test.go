package ratelimit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/redistest"
	"github.com/levee-lab/levee/internal/wire"
)

// TestTokenBucketSettlesAcrossGateways: issue 12's reservation and
// settlement in the Redis token bucket, end to end. Three real gateways
// share one token-cost bucket (burst B, refill R tokens/s) for tenant-a's
// chats through a real redis-server. Each chat is estimated at 1,000
// tokens (100 of prompt + max_tokens 900) and really uses 101..1,000 (the
// model's usage); every gateway reserves the estimate and refunds the
// rest. Over the run the tokens the admitted chats really used stay within
// B + R × elapsed (overshoot ≤ 1 %), while the estimates admitted exceed
// it by far: the refunds were spent again.
func TestTokenBucketSettlesAcrossGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("2 s of HTTP load; skipped with -short")
	}
	const (
		gateways = 3
		workers  = 4 // per gateway, each sending as fast as answers come
		burst    = 20_000
		rate     = 20_000 // tokens/s
		run      = 2 * time.Second
	)
	srv := redistest.Start(t)
	var seq atomic.Int64
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.PathChat {
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		compl := 1 + (seq.Add(1)*7919)%900 // 1..900 of the 900 asked
		fmt.Fprintf(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":%d,"total_tokens":%d}}`, compl, 100+compl)
	}))
	t.Cleanup(node.Close)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	urls := make([]string, gateways)
	for i := range urls {
		cfg := gateway.DefaultConfig()
		cfg.Listen, cfg.Admin = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Upstream.Nodes = []string{strings.TrimPrefix(node.URL, "http://")}
		cfg.Keys = []gateway.KeyConfig{{Key: "key-a", Tenant: "tenant-a", Priority: "P1"}}
		// A generous store timeout: this is about accounting, and a local
		// fallback would decide with its own share.
		cfg.RateLimit.Store = gateway.StoreConfig{Kind: "redis", URL: srv.URL(), Timeout: time.Second, FailOpen: true, Share: 1.0 / gateways}
		cfg.RateLimit.Rules = []gateway.RuleConfig{{
			Tenant: "tenant-a", Route: wire.RouteChat, Cost: gateway.CostTokens,
			Rule: ratelimit.Rule{Algorithm: ratelimit.TokenBucket, ReplenishRate: rate, Burst: burst},
		}}
		cfg.Defenses = wire.Defenses{RateLimit: true}
		g, err := gateway.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		g.Run(ctx)
		hs := httptest.NewServer(g.Handler())
		t.Cleanup(func() { hs.Close(); g.Close() })
		urls[i] = hs.URL
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := `{"model":"m","max_tokens":900,"messages":[{"role":"user","content":"` + strings.Repeat("a", 400) + `"}]}`

	var (
		mu                      sync.Mutex
		used, estimated, ok, sh int64
		other                   string
		wg                      sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(run)
	for _, u := range urls {
		for range workers {
			wg.Go(func() {
				for time.Now().Before(end) {
					req, _ := http.NewRequest(http.MethodPost, u+wire.PathChat, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer key-a")
					resp, err := client.Do(req)
					if err != nil {
						mu.Lock()
						other = err.Error()
						mu.Unlock()
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					var a struct {
						Usage struct {
							Total int64 `json:"total_tokens"`
						} `json:"usage"`
					}
					mu.Lock()
					switch o := resp.Header.Get(wire.HeaderOutcome); {
					case o == "ok" && json.Unmarshal(b, &a) == nil:
						ok++
						used += a.Usage.Total
						estimated += 1000
					case o == "shed_ratelimit":
						sh++
					default:
						other = resp.Status + " " + string(b)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	limit := burst + rate*elapsed.Seconds()
	t.Logf("%d gateways, %v: %d chats admitted, %d shed; tokens used %d, estimated %d, limit B + R·t = %.0f (used/limit %.4f, estimated/limit %.2f)",
		gateways, elapsed.Round(time.Millisecond), ok, sh, used, estimated, limit, float64(used)/limit, float64(estimated)/limit)
	if other != "" {
		t.Fatalf("a request ended neither ok nor shed_ratelimit: %s", other)
	}
	if fb := sum(fallbacks(t, client, urls)); fb != 0 {
		t.Fatalf("%v decisions fell back to the local shares; the run says nothing about Redis", fb)
	}
	if float64(used) > 1.01*limit {
		t.Fatalf("tokens used %d exceed the limit %.0f by %.2f %% (allowed 1 %%)", used, limit, 100*(float64(used)/limit-1))
	}
	if sh == 0 || float64(estimated) < 1.1*limit {
		t.Fatalf("estimates admitted %d against a limit of %.0f (%d shed): the refunds were not spent again", estimated, limit, sh)
	}
}
