package gateway

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/ratelimit"
)

func TestRuleResolution(t *testing.T) {
	rules := []RuleConfig{
		{Tenant: "*", Route: "*", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 1, Window: time.Second}, Cost: CostRequests},
		{Tenant: "*", Route: "chat", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 2, Window: time.Second}, Cost: CostRequests},
		{Tenant: "web", Route: "*", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 3, Window: time.Second}, Cost: CostRequests},
		{Tenant: "web", Route: "chat", Rule: ratelimit.Rule{Algorithm: ratelimit.TokenBucket, ReplenishRate: 1, Burst: 4}, Cost: CostTokens},
	}
	tenants := []string{"anonymous", "web"}
	rt, err := newRuleTable(rules, tenants)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tid       int
		route     routeID
		capacity  int64
		tokens    bool
		sharedKey routeID // a route whose key must equal this one's (shared bucket); numRoutes: none
	}{
		{1, routeChat, 4, true, numRoutes},        // tenant+route
		{1, routePredict, 3, false, routeAgent},   // tenant+*: one bucket for every route
		{0, routeChat, 2, false, numRoutes},       // *+route
		{0, routeExport, 1, false, routeStandard}, // *+*
	} {
		e := rt.lookup(tc.tid, tc.route)
		if e == nil || e.rule.Capacity() != tc.capacity || e.tokens != tc.tokens {
			t.Errorf("tenant %s route %s: %+v; want capacity %d tokens %v", tenants[tc.tid], tc.route, e, tc.capacity, tc.tokens)
			continue
		}
		if tc.sharedKey != numRoutes && rt.lookup(tc.tid, tc.sharedKey).key != e.key {
			t.Errorf("tenant %s: %s and %s should share one bucket", tenants[tc.tid], tc.route, tc.sharedKey)
		}
	}
	if rt.lookup(0, routeOther) != nil || rt.lookup(7, routeChat) != nil {
		t.Errorf("unknown route or tenant resolved a rule")
	}
	if rt.lookup(0, routeChat).key == rt.lookup(1, routeChat).key {
		t.Errorf("two tenants share a bucket")
	}
	if _, err := newRuleTable([]RuleConfig{{Tenant: "*", Route: "*", Rule: ratelimit.Rule{Algorithm: "leaky"}}}, tenants); err == nil {
		t.Errorf("invalid rule accepted")
	}
}

func TestLatencyTracker(t *testing.T) {
	var lt latencyTracker
	if r := lt.ratio(0); r != 1 {
		t.Errorf("no signal: ratio %v, want 1", r)
	}
	feed := func(d time.Duration) float64 {
		for range 10 {
			lt.observe(d)
		}
		return lt.ratio(10)
	}
	if r := feed(100 * time.Millisecond); r != 1 {
		t.Errorf("first window: %v, want 1", r)
	}
	if r := feed(400 * time.Millisecond); r < 3.9 || r > 4.01 {
		t.Errorf("4× slower: ratio %v", r)
	}
	if r := feed(50 * time.Millisecond); r != 1 {
		t.Errorf("faster: baseline follows down, ratio %v", r)
	}
	lt.observe(time.Second) // too few samples: previous ratio kept
	if r := lt.ratio(1); r != 1 {
		t.Errorf("one sample: ratio %v, want the previous 1", r)
	}
	var fast latencyTracker
	for range 10 {
		fast.observe(100 * time.Microsecond)
	}
	fast.ratio(10)
	for range 10 {
		fast.observe(2 * time.Millisecond)
	}
	if r := fast.ratio(10); r > 0.21 {
		t.Errorf("loopback jitter 0.1→2 ms read as ratio %v; the 10 ms floor should keep it below 1", r)
	}
}

func TestThresholdsFromWatermarks(t *testing.T) {
	cfg := testConfig("127.0.0.1:9")
	cfg.Classes.AI.Limiter.Limit = 40
	cfg.Guard.InflightRatio = Watermarks{Yellow: 1.25, Red: 2}
	cfg.Guard.HeapMB = Watermarks{Yellow: 1}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	th := g.guard.Thresholds()
	if th.Yellow.Inflight != 50 || th.Red.Inflight != 80 || th.Black.Inflight != 0 || th.Yellow.HeapBytes != 1<<20 {
		t.Errorf("thresholds %+v", th)
	}
	local := g.localGuard.Thresholds()
	if local.Yellow.Inflight != 0 || local.Yellow.QueueFill != 0 || local.Red.UpstreamLatencyRatio != 0 || local.Yellow.HeapBytes != 1<<20 {
		t.Errorf("local guard keeps upstream signals: %+v", local)
	}
}

func TestClassify(t *testing.T) {
	cfg := testConfig("127.0.0.1:9")
	kt := newKeyTable(&cfg)
	for _, tc := range []struct {
		auth     string
		tenant   string
		priority admit.Priority
	}{
		{"Bearer k0", "trade", admit.P0},
		{"bearer   k1 ", "web", admit.P1},
		{"Basic k0", "anonymous", admit.P2},
		{"Bearer nope", "anonymous", admit.P2},
		{"", "anonymous", admit.P2},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		id, ok := kt.classify(r)
		if !ok || id.Tenant != tc.tenant || id.Priority != tc.priority {
			t.Errorf("%q: %+v %v; want %s %s", tc.auth, id, ok, tc.tenant, tc.priority)
		}
	}
	if got := estimateTokens(9, 16); got != 3+16 {
		t.Errorf("estimateTokens(9, 16) = %d, want 19 (chars/4 rounded up + max_tokens)", got)
	}
}
