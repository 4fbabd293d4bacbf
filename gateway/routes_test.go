package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/pressure"
	"github.com/levee-lab/levee/internal/wire"
)

func TestRoutesHappy(t *testing.T) {
	fm := newFakeModel(t, 8, 5*time.Millisecond)
	s := startServer(t, testConfig(fm.addr()))
	base := "http://" + s.Addr()
	for _, tc := range []struct {
		name, method, path, key, body string
		want                          string // substring of the body
	}{
		{"predict", "POST", "/v1/predict", "k1", predictBody, `"decision":"APPROVE"`},
		{"chat", "POST", "/v1/chat/completions", "k1", chatBody, `"content":"answer"`},
		{"chat stream", "POST", "/v1/chat/completions", "k1", streamBody, "data: [DONE]"},
		{"agent", "POST", "/v1/agent", "k0", agentBody, `"subcalls_ok":4`},
		{"export", "GET", "/v1/export?rows=5", "k2", "", `"row":4`},
		{"standard", "GET", "/v1/standard/profile", "", "", `"path":"/v1/standard/profile"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := call(t, tc.method, base+tc.path, tc.key, tc.body)
			if a.status != 200 || a.outcome != "ok" || !strings.Contains(string(a.body), tc.want) {
				t.Fatalf("%v; want 200 ok containing %s", a, tc.want)
			}
			if a.header.Get(wire.HeaderFallback) != "" {
				t.Errorf("fallback header on a real answer")
			}
		})
	}
	fams := scrape(t, s)
	if got := counterSum(fams, "levee_requests_total", map[string]string{"outcome": "ok"}); got != 6 {
		t.Errorf("levee_requests_total{outcome=ok} = %v, want 6", got)
	}
	if got := counterSum(fams, "levee_requests_total", map[string]string{"route": "standard", "priority": "P2"}); got != 1 {
		t.Errorf("anonymous standard request counted %v times as P2, want 1", got)
	}
}

func TestBadInput(t *testing.T) {
	fm := newFakeModel(t, 8, time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.BodyLimitBytes = 1024
	cfg.MaxHeaderBytes = 4096
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	big := `{"features":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	for _, tc := range []struct {
		name, method, path, key, body string
		hdr                           []string
		status                        int
		field                         string
		code                          string
	}{
		{"body over limit", "POST", "/v1/predict", "k1", big, nil, 413, "", wire.CodeRequestTooLarge},
		{"not json", "POST", "/v1/predict", "k1", `{"features":`, nil, 400, "", wire.CodeInvalidRequest},
		{"not an object", "POST", "/v1/predict", "k1", `[1]`, nil, 400, "", wire.CodeInvalidRequest},
		{"missing features", "POST", "/v1/predict", "k1", `{"x":1}`, nil, 400, "features", wire.CodeInvalidRequest},
		{"empty messages", "POST", "/v1/chat/completions", "k1", `{"messages":[]}`, nil, 400, "messages", wire.CodeInvalidRequest},
		{"message without role", "POST", "/v1/chat/completions", "k1", `{"messages":[{"content":"a"}]}`, nil, 400, "messages[0].role", wire.CodeInvalidRequest},
		{"content wrong type", "POST", "/v1/chat/completions", "k1", `{"messages":[{"role":"u","content":"a"},{"role":"u","content":7}]}`, nil, 400, "messages[1].content", wire.CodeInvalidRequest},
		{"max_tokens negative", "POST", "/v1/chat/completions", "k1", `{"messages":[{"role":"u","content":"a"}],"max_tokens":-1}`, nil, 400, "max_tokens", wire.CodeInvalidRequest},
		{"max_tokens wrong type", "POST", "/v1/chat/completions", "k1", `{"messages":[{"role":"u","content":"a"}],"max_tokens":"x"}`, nil, 400, "max_tokens", wire.CodeInvalidRequest},
		{"agent without prompt", "POST", "/v1/agent", "k1", `{"max_tokens":3}`, nil, 400, "prompt", wire.CodeInvalidRequest},
		{"bad deadline", "POST", "/v1/predict", "k1", predictBody, []string{wire.HeaderDeadlineMs, "soon"}, 400, wire.HeaderDeadlineMs, wire.CodeInvalidRequest},
		{"bad rows", "GET", "/v1/export?rows=0", "k1", "", nil, 400, "rows", wire.CodeInvalidRequest},
		{"wrong method", "GET", "/v1/predict", "k1", "", nil, 405, "", wire.CodeMethodNotAllowed},
		{"unknown route", "GET", "/v1/nope", "k1", "", nil, 404, "", wire.CodeUnknownURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := call(t, tc.method, base+tc.path, tc.key, tc.body, tc.hdr...)
			if a.status != tc.status || a.outcome != "error" {
				t.Fatalf("%v; want %d with outcome error", a, tc.status)
			}
			if f := a.errorField(); f != tc.field {
				t.Errorf("error field %q, want %q", f, tc.field)
			}
			if c := a.errorCode(); c != tc.code {
				t.Errorf("error code %q, want %q", c, tc.code)
			}
		})
	}
	if n := fm.arrivals.Load(); n != 0 {
		t.Errorf("bad requests reached the model %d times", n)
	}
	// Headers over MaxHeaderBytes: net/http answers 431 itself.
	a := call(t, "GET", base+"/v1/standard/x", "", "", "X-Big", strings.Repeat("y", 20000))
	if a.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("huge header: %v, want 431", a)
	}
	fams := scrape(t, s)
	if got := counterSum(fams, "levee_requests_total", map[string]string{"outcome": "error"}); got != 14 {
		t.Errorf("levee_requests_total{outcome=error} = %v, want 14", got)
	}
}

func TestUnknownKeyPolicy(t *testing.T) {
	fm := newFakeModel(t, 8, time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.UnknownKey = UnknownKeyReject
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	for _, key := range []string{"", "nope"} {
		a := call(t, "POST", base+"/v1/predict", key, predictBody)
		if a.status != 401 || a.outcome != "error" || a.errorField() != "Authorization" || a.errorCode() != wire.CodeInvalidAPIKey {
			t.Errorf("key %q: %v; want 401 naming Authorization, code %s", key, a, wire.CodeInvalidAPIKey)
		}
	}
	if a := call(t, "POST", base+"/v1/predict", "k0", predictBody); a.status != 200 {
		t.Errorf("known key: %v", a)
	}
	// A client's own priority header is never trusted: with the anonymous
	// policy, a keyless request claiming P0 is still P2 and shed in yellow.
	cfg2 := testConfig(fm.addr())
	s2 := startServer(t, cfg2)
	admin(t, s2, "PUT", "/admin/level", `{"level":"yellow"}`)
	a := call(t, "POST", "http://"+s2.Addr()+"/v1/predict", "", predictBody, "X-Priority", "P0", "X-Levee-Priority", "P0")
	if a.status != 429 || a.outcome != "shed_overload" {
		t.Errorf("keyless request claiming P0 in yellow: %v; want 429 shed_overload", a)
	}
}

func TestRateLimit(t *testing.T) {
	fm := newFakeModel(t, 8, time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.RateLimit.Rules = []RuleConfig{
		{Tenant: "*", Route: "predict", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 3, Window: 10 * time.Second}, Cost: CostRequests},
		{Tenant: "batch", Route: "chat", Rule: ratelimit.Rule{Algorithm: ratelimit.TokenBucket, ReplenishRate: 1, Burst: 100}, Cost: CostTokens},
	}
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	for i := range 3 {
		if a := call(t, "POST", base+"/v1/predict", "k1", predictBody); a.status != 200 {
			t.Fatalf("request %d: %v", i, a)
		}
	}
	a := call(t, "POST", base+"/v1/predict", "k1", predictBody)
	ra, _ := strconv.Atoi(a.header.Get("Retry-After"))
	if a.status != 429 || a.outcome != "shed_ratelimit" || ra < 1 || ra > 10 || a.errorCode() != wire.CodeRateLimitExceeded {
		t.Fatalf("4th request: %v Retry-After %q; want 429 shed_ratelimit code %s with Retry-After in [1,10]", a, a.header.Get("Retry-After"), wire.CodeRateLimitExceeded)
	}
	// Another tenant has its own bucket.
	if a := call(t, "POST", base+"/v1/predict", "k0", predictBody); a.status != 200 {
		t.Errorf("other tenant: %v", a)
	}
	// Token-cost bucket: 8 max_tokens + 3 prompt tokens = 11 per request,
	// burst 100: the 10th request does not fit.
	var shedAt int
	for i := 1; i <= 12 && shedAt == 0; i++ {
		if a := call(t, "POST", base+"/v1/chat/completions", "k2", chatBody); a.outcome == "shed_ratelimit" {
			shedAt = i
		}
	}
	if shedAt != 10 {
		t.Errorf("token bucket shed at request %d, want 10", shedAt)
	}
	// A request whose cost exceeds the bucket's burst can never pass: the
	// client's to change, answered 400 with no Retry-After to retry on.
	big := `{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":500}`
	if a := call(t, "POST", base+"/v1/chat/completions", "k2", big); a.status != 400 || a.outcome != "error" ||
		a.header.Get("Retry-After") != "" || !strings.Contains(string(a.body), "can never pass") || a.errorCode() != wire.CodeCostExceedsLimit {
		t.Errorf("cost above the burst: %v %s Retry-After %q; want 400 error code %s saying it can never pass, no Retry-After", a, a.body, a.header.Get("Retry-After"), wire.CodeCostExceedsLimit)
	}
	// Off: the limit no longer applies.
	admin(t, s, "PUT", "/admin/defenses", `{"ratelimit":false}`)
	if a := call(t, "POST", base+"/v1/predict", "k1", predictBody); a.status != 200 {
		t.Errorf("ratelimit off: %v", a)
	}
	fams := scrape(t, s)
	if got := counterSum(fams, "levee_shed_total", map[string]string{"reason": "ratelimit"}); got != 2 {
		t.Errorf("levee_shed_total{reason=ratelimit} = %v, want 2", got)
	}
}

// TestRateLimitStoreFailClosed: with a Redis store that is down and
// fail_open false, every limited request is denied, and the answer says why
// (the store, not the tenant's use).
func TestRateLimitStoreFailClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	fm := newFakeModel(t, 8, time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.RateLimit.Store = StoreConfig{Kind: wire.StoreRedis, URL: "redis://" + dead, Timeout: 5 * time.Millisecond, FailOpen: false, Share: 1}
	cfg.RateLimit.Rules = []RuleConfig{
		{Tenant: "*", Route: "predict", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 100, Window: 10 * time.Second}, Cost: CostRequests},
	}
	s := startServer(t, cfg)
	a := call(t, "POST", "http://"+s.Addr()+"/v1/predict", "k1", predictBody)
	if a.status != 429 || a.outcome != "shed_ratelimit" || a.header.Get("Retry-After") == "" ||
		!strings.Contains(string(a.body), "rate limit store unavailable (fail closed)") || a.errorCode() != wire.CodeRateLimitStore {
		t.Fatalf("store down, fail closed: %v %s; want 429 shed_ratelimit saying the store is unavailable, with Retry-After", a, a.body)
	}
}

func TestGuardLevels(t *testing.T) {
	fm := newFakeModel(t, 8, time.Millisecond)
	s := startServer(t, testConfig(fm.addr()))
	base := "http://" + s.Addr()
	type want struct {
		status  int
		outcome string
	}
	for _, tc := range []struct {
		level    string
		fallback bool
		path     string
		body     string
		key      string
		want     want
	}{
		{"yellow", true, "/v1/predict", predictBody, "k2", want{429, "shed_overload"}},
		{"yellow", true, "/v1/predict", predictBody, "k1", want{200, "ok"}},
		{"red", true, "/v1/predict", predictBody, "k1", want{503, "shed_overload"}},
		{"red", true, "/v1/predict", predictBody, "k0", want{200, "ok"}},
		{"black", true, "/v1/predict", predictBody, "k0", want{200, "fallback"}},
		{"black", true, "/v1/chat/completions", chatBody, "k0", want{200, "fallback"}},
		{"black", true, "/v1/chat/completions", streamBody, "k0", want{200, "fallback"}},
		{"black", true, "/v1/agent", agentBody, "k0", want{200, "fallback"}},
		{"black", true, "/v1/standard/x", "", "k0", want{503, "shed_overload"}},
		{"black", false, "/v1/predict", predictBody, "k0", want{503, "shed_overload"}},
	} {
		t.Run(tc.level+" "+tc.key+" "+tc.path, func(t *testing.T) {
			admin(t, s, "PUT", "/admin/defenses", `{"fallback":`+strconv.FormatBool(tc.fallback)+`}`)
			admin(t, s, "PUT", "/admin/level", `{"level":"`+tc.level+`"}`)
			method := "POST"
			if tc.body == "" {
				method = "GET"
			}
			a := call(t, method, base+tc.path, tc.key, tc.body)
			if a.status != tc.want.status || a.outcome != tc.want.outcome {
				t.Fatalf("%v; want %d %s", a, tc.want.status, tc.want.outcome)
			}
			if tc.want.outcome == "shed_overload" {
				// Forced, the level holds until unpinned: the cooldown.
				if ra := a.header.Get("Retry-After"); ra != "2" {
					t.Errorf("%d shed_overload with Retry-After %q, want the 2 s cooldown", a.status, ra)
				}
			}
			if tc.want.outcome == "shed_overload" && a.errorCode() != wire.CodeOverloaded {
				t.Errorf("overload shed with code %q, want %q", a.errorCode(), wire.CodeOverloaded)
			}
			if tc.want.outcome == "fallback" {
				if a.header.Get(wire.HeaderFallback) != "true" || !strings.Contains(string(a.body), `"fallback":true`) {
					t.Errorf("fallback not marked: %v", a)
				}
			}
		})
	}
	// The predict fallback is seed 000's static rule answer.
	admin(t, s, "PUT", "/admin/defenses", `{"fallback":true}`)
	admin(t, s, "PUT", "/admin/level", `{"level":"black"}`)
	a := call(t, "POST", base+"/v1/predict", "k0", predictBody)
	var fb map[string]any
	_ = json.Unmarshal(a.body, &fb)
	if fb["decision"] != "REVIEW" || fb["score"] != 0.5 || fb["fallback"] != true {
		t.Errorf("predict fallback %s", a.body)
	}
	// Guard off: the forced level no longer sheds.
	admin(t, s, "PUT", "/admin/defenses", `{"guard":false}`)
	if a := call(t, "POST", base+"/v1/predict", "k2", predictBody); a.status != 200 || a.outcome != "ok" {
		t.Errorf("guard off: %v", a)
	}
	if st := admin(t, s, "PUT", "/admin/level", `{"level":""}`); st.status != 200 {
		t.Errorf("unforce: %v", st)
	}
}

func TestGuardReactsToUpstreamSignals(t *testing.T) {
	// One slot of 30 ms, no bulkhead: in-flight requests pile up upstream,
	// and the level must rise although the gateway's own CPU is idle (the
	// shed level rises in proportion to the excess: past red, one priority
	// per cooldown, so yellow within a fraction of it).
	fm := newFakeModel(t, 1, 30*time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.Defenses.Bulkhead = false
	cfg.Classes.AI.Limiter.Limit, cfg.Classes.AI.Limiter.Min = 4, 1
	cfg.Guard.InflightRatio = Watermarks{Yellow: 2, Red: 4}
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	done := make(chan answer, 20)
	for range 20 {
		go func() { done <- call(t, "POST", base+"/v1/predict", "k0", predictBody, wire.HeaderDeadlineMs, "3000") }()
	}
	eventually(t, 3*time.Second, func() bool { return s.G.Level() >= 1 }, "level yellow from upstream in-flight")
	for range 20 {
		<-done
	}
}

func TestBulkheadQueue(t *testing.T) {
	fm := newFakeModel(t, 8, 300*time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.Classes.AI = staticClass(1, 1, 4, 1, 2*time.Second)
	cfg.Defenses.Guard = false // a full queue of one would turn the level red
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	results := make(chan answer, 3)
	send := func(key string) { results <- call(t, "POST", base+"/v1/predict", key, predictBody) }
	go send("k2") // takes the only permit
	eventually(t, 2*time.Second, func() bool { return fm.inflight.Load() == 1 }, "first request upstream")
	go send("k2") // waits in the queue
	eventually(t, 2*time.Second, func() bool { return s.G.bulkheads[classAI].Stats().Queued() == 1 }, "P2 queued")
	go send("k0") // displaces the P2 waiter
	got := map[string]int{}
	for range 3 {
		a := <-results
		got[a.outcome]++
		if a.outcome == "shed_queue_full" && (a.status != 503 || a.errorCode() != wire.CodeQueueFull || !retryAfterOK(a)) {
			t.Errorf("queue full: %v Retry-After %q; want 503 code %s with Retry-After", a, a.header.Get("Retry-After"), wire.CodeQueueFull)
		}
	}
	if got["ok"] != 2 || got["shed_queue_full"] != 1 {
		t.Errorf("outcomes %v; want 2 ok, 1 shed_queue_full (P2 displaced by P0)", got)
	}

	// Queue timeout.
	if a := admin(t, s, "PUT", "/admin/limits", `{"classes":{"ai":{"queue_timeout_ms":50}}}`); a.status != 200 {
		t.Fatalf("set queue timeout: %v", a)
	}
	go send("k1")
	eventually(t, 2*time.Second, func() bool { return fm.inflight.Load() == 1 }, fmt.Sprintf("request upstream (%+v, model %d)", s.G.bulkheads[classAI].Stats(), fm.inflight.Load()))
	a := call(t, "POST", base+"/v1/predict", "k1", predictBody)
	if a.status != 503 || a.outcome != "shed_queue_timeout" || a.errorCode() != wire.CodeQueueTimeout || !retryAfterOK(a) {
		t.Errorf("queued past the timeout: %v Retry-After %q; want 503 code %s with Retry-After", a, a.header.Get("Retry-After"), wire.CodeQueueTimeout)
	}
	<-results

	// Bulkhead off: no limit, no queue.
	admin(t, s, "PUT", "/admin/defenses", `{"bulkhead":false}`)
	for range 4 {
		go send("k2")
	}
	for range 4 {
		if a := <-results; a.outcome != "ok" {
			t.Errorf("bulkhead off: %v", a)
		}
	}
	if m := fm.maxInfl.Load(); m < 4 {
		t.Errorf("bulkhead off: at most %d upstream at once, want 4", m)
	}
}

func TestStandardHasItsOwnPool(t *testing.T) {
	fm := newFakeModel(t, 1, 200*time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.Classes.AI = staticClass(1, 1, 4, 0, time.Second)
	cfg.Defenses.Guard = false
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	done := make(chan answer, 1)
	go func() { done <- call(t, "POST", base+"/v1/predict", "k1", predictBody) }()
	eventually(t, 2*time.Second, func() bool { return fm.inflight.Load() == 1 }, "ai busy")
	if a := call(t, "POST", base+"/v1/predict", "k1", predictBody); a.outcome != "shed_queue_full" {
		t.Errorf("ai full: %v", a)
	}
	if a := call(t, "GET", base+"/v1/standard/x", "k1", ""); a.outcome != "ok" {
		t.Errorf("standard while ai is full: %v", a)
	}
	<-done
}

func TestBudget(t *testing.T) {
	fm := newFakeModel(t, 8, 200*time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.TokenBudget = 100
	cfg.Budget.ReserveP0, cfg.Budget.ReserveP1 = 0, 0 // no headroom: the cap is the whole budget
	cfg.Defenses.Guard = false
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	heavy := `{"messages":[{"role":"user","content":"x"}],"max_tokens":90}`
	done := make(chan answer, 1)
	go func() { done <- call(t, "POST", base+"/v1/chat/completions", "k1", heavy) }()
	eventually(t, 2*time.Second, func() bool { return s.G.budget.Inflight() == 91 }, "tokens held")
	a := call(t, "POST", base+"/v1/chat/completions", "k1", heavy)
	if a.status != 503 || a.outcome != "shed_budget" || a.errorCode() != wire.CodeBudgetExhausted || !retryAfterOK(a) {
		t.Errorf("over budget: %v Retry-After %q; want 503 code %s with Retry-After", a, a.header.Get("Retry-After"), wire.CodeBudgetExhausted)
	}
	if a := <-done; a.outcome != "ok" {
		t.Errorf("first: %v", a)
	}
	// The answer goes out (Content-Length, flushed) before the handler
	// returns and gives its tokens back: wait for that, do not race it.
	eventually(t, 5*time.Second, func() bool { return s.G.budget.Inflight() == 0 }, "the tokens to come back after completion")
	admin(t, s, "PUT", "/admin/defenses", `{"budget":false}`)
	go func() { done <- call(t, "POST", base+"/v1/chat/completions", "k1", heavy) }()
	if a := call(t, "POST", base+"/v1/chat/completions", "k1", heavy); a.outcome != "ok" {
		t.Errorf("budget off: %v", a)
	}
	<-done
}

func TestUpstreamFailureFallsBack(t *testing.T) {
	fm := newFakeModel(t, 8, time.Millisecond)
	s := startServer(t, testConfig(fm.addr()))
	base := "http://" + s.Addr()
	fm.status.Store(500)
	a := call(t, "POST", base+"/v1/predict", "k1", predictBody)
	if a.outcome != "fallback" || a.header.Get(wire.HeaderFallback) != "true" {
		t.Errorf("model 500, fallback on: %v", a)
	}
	admin(t, s, "PUT", "/admin/defenses", `{"fallback":false}`)
	a = call(t, "POST", base+"/v1/predict", "k1", predictBody)
	if a.status != 502 || a.outcome != "error" || a.errorCode() != wire.CodeUpstreamError {
		t.Errorf("model 500, fallback off: %v; want 502 code %s", a, wire.CodeUpstreamError)
	}
	// A 4xx from the model is relayed as an error (the request was bad).
	fm.status.Store(400)
	a = call(t, "POST", base+"/v1/predict", "k1", predictBody)
	if a.status != 400 || a.outcome != "error" {
		t.Errorf("model 400: %v", a)
	}
	// A dead node: connection refused.
	admin(t, s, "PUT", "/admin/defenses", `{"fallback":true}`)
	fm.srv.Close()
	a = call(t, "POST", base+"/v1/chat/completions", "k1", chatBody)
	if a.outcome != "fallback" {
		t.Errorf("dead node: %v", a)
	}
	fams := scrape(t, s)
	if got := counterSum(fams, "levee_fallbacks_total", map[string]string{"reason": "upstream"}); got != 2 {
		t.Errorf("levee_fallbacks_total{reason=upstream} = %v, want 2", got)
	}
}

// TestDeadline: a request's deadline is answered at the deadline (504),
// while the model still works on the call — not after the model ends; a
// deadline below the least service time is refused without calling the
// model; the time left travels upstream.
func TestDeadline(t *testing.T) {
	// The model holds every call until the test ends: an answer that
	// waited for the model would be the client's 10 s timeout instead.
	fm := newFakeModel(t, 8, 0)
	fm.hold = make(chan struct{})
	t.Cleanup(func() { close(fm.hold) }) // before the model's server closes
	cfg := testConfig(fm.addr())
	cfg.Upstream.MinServiceTime = 50 * time.Millisecond
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	a := call(t, "POST", base+"/v1/predict", "k1", predictBody, wire.HeaderDeadlineMs, "100")
	if a.status != 504 || a.outcome != "timeout" || a.errorCode() != wire.CodeDeadlineExceeded {
		t.Errorf("deadline 100ms, the model still working: %v; want 504 code %s", a, wire.CodeDeadlineExceeded)
	}
	before := fm.arrivals.Load()
	a = call(t, "POST", base+"/v1/predict", "k1", predictBody, wire.HeaderRequestTimeoutMs, "20")
	if a.status != 504 || a.outcome != "timeout" {
		t.Errorf("deadline below min service time: %v", a)
	}
	if fm.arrivals.Load() != before {
		t.Errorf("the model was called although the deadline could not be met")
	}
	// The remaining time travels upstream.
	var seen string
	up := newFakeModel(t, 1, 0)
	up.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/predict" {
			seen = r.Header.Get(wire.HeaderDeadlineMs)
		}
		_, _ = io.WriteString(w, `{"decision":"APPROVE","score":1}`)
	})
	s2 := startServer(t, testConfig(up.addr()))
	call(t, "POST", "http://"+s2.Addr()+"/v1/predict", "k1", predictBody, wire.HeaderDeadlineMs, "1500")
	if ms, err := strconv.Atoi(seen); err != nil || ms <= 1000 || ms > 1500 {
		t.Errorf("upstream saw %s %q, want (1000, 1500]", wire.HeaderDeadlineMs, seen)
	}
}

func TestChatStreamRelaysProgressively(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	fm.streamGate = make(chan struct{})
	s := startServer(t, testConfig(fm.addr()))
	req, _ := http.NewRequest("POST", "http://"+s.Addr()+"/v1/chat/completions", strings.NewReader(streamBody))
	req.Header.Set("Authorization", "Bearer k1")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	// The first event arrives while the model still holds the rest.
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "tok0") {
		t.Fatalf("first event %q, %v", line, err)
	}
	close(fm.streamGate)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "tok2") || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if got := resp.Trailer.Get(wire.HeaderOutcomeFinal); got != "ok" {
		t.Errorf("trailer %s = %q, want ok", wire.HeaderOutcomeFinal, got)
	}
}

func TestExportSlowClientIsCut(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	cfg := testConfig(fm.addr())
	cfg.Stream.WriteTimeout = 200 * time.Millisecond
	cfg.Stream.BufferBytes = 4096
	s := startServer(t, cfg)
	const rows = 200000 // × 200 B = 40 MB
	conn := dialSlowReader(t, s.Addr())
	_, _ = io.WriteString(conn, "GET /v1/export?rows="+strconv.Itoa(rows)+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k2\r\n\r\n")
	// Read nothing: the gateway's writes block, then hit the write deadline.
	eventually(t, 5*time.Second, func() bool {
		return counterSum(scrape(t, s), "levee_requests_total", map[string]string{"route": "export"}) == 1
	}, "export to end")
	fams := scrape(t, s)
	if got := counterSum(fams, "levee_requests_total", map[string]string{"route": "export", "outcome": "timeout"}); got != 1 {
		t.Errorf("stalled export counted as %v timeouts, want 1", got)
	}
	// Whatever was sent is a fraction of the export, and the stream was cut.
	_ = conn.SetReadDeadline(time.Now().Add(time.Second)) // a closed orphan socket may never send its FIN
	n, err := io.Copy(io.Discard, conn)
	if n >= rows*200/2 {
		t.Errorf("client received %d bytes of a %d-byte export: the gateway did not stop at the slow client", n, rows*200)
	}
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Logf("read ended with %v", err)
	}
	if testing.Verbose() {
		t.Logf("received %d bytes, err %v", n, err)
	}
}

func TestAdminAPI(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	s := startServer(t, testConfig(fm.addr()))
	for _, tc := range []struct {
		name, method, path, body, tok string
		status                        int
		field                         string
	}{
		{"no token", "GET", "/admin/state", "", "", 401, "Authorization"},
		{"wrong token", "GET", "/admin/state", "", "nope", 401, "Authorization"},
		{"state", "GET", "/admin/state", "", testToken, 200, ""},
		{"unknown defense", "PUT", "/admin/defenses", `{"moat":true}`, testToken, 400, "moat"},
		{"defense not bool", "PUT", "/admin/defenses", `{"guard":1}`, testToken, 400, "guard"},
		{"bad limit", "PUT", "/admin/limits", `{"classes":{"ai":{"limit":0}}}`, testToken, 400, "classes.ai.limit"},
		{"bad algorithm", "PUT", "/admin/limits", `{"classes":{"ai":{"algorithm":"magic"}}}`, testToken, 400, "classes.ai.algorithm"},
		{"unknown class", "PUT", "/admin/limits", `{"classes":{"gpu":{"limit":3}}}`, testToken, 400, "classes.gpu"},
		{"empty class name", "PUT", "/admin/limits", `{"classes":{"":{}}}`, testToken, 400, `classes.""`},
		{"empty defense name", "PUT", "/admin/defenses", `{"":true}`, testToken, 400, `""`},
		{"unknown limits field", "PUT", "/admin/limits", `{"clases":{}}`, testToken, 400, "clases"},
		{"bad rule", "PUT", "/admin/limits", `{"ratelimit":{"rules":[{"tenant":"*","route":"chat","algorithm":"token_bucket","replenish_rate":1}]}}`, testToken, 400, "ratelimit.rules[0].burst"},
		{"bad budget", "PUT", "/admin/limits", `{"token_budget":0}`, testToken, 400, "token_budget"},
		{"bad pressure", "PUT", "/admin/pressure", `{"cpu_hog_duty":2}`, testToken, 400, "cpu_hog_duty"},
		{"bad level", "PUT", "/admin/level", `{"level":"purple"}`, testToken, 400, "level"},
		{"unknown route", "GET", "/admin/nope", "", testToken, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := admin(t, s, tc.method, tc.path, tc.body, tc.tok)
			if a.status != tc.status || a.errorField() != tc.field {
				t.Fatalf("%v field %q; want %d field %q", a, a.errorField(), tc.status, tc.field)
			}
			if want := map[int]string{400: wire.CodeInvalidRequest, 401: wire.CodeInvalidAPIKey, 404: wire.CodeUnknownURL}[tc.status]; a.errorCode() != want {
				t.Errorf("error code %q, want %q", a.errorCode(), want)
			}
		})
	}
	// What the answer says: JSON's words, not Go's, and a known path asked
	// with the wrong method is a 405 naming the right one, as net/http's
	// own mux would answer.
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		field, msg, allow        string
	}{
		{"limit a string", "PUT", "/admin/limits", `{"classes":{"ai":{"limit":"8"}}}`, 400, "classes.ai.limit", "classes.ai.limit: must be an integer, got a JSON string", ""},
		{"defense a number", "PUT", "/admin/defenses", `{"guard":1}`, 400, "guard", "guard: must be a boolean, got a JSON number", ""},
		{"a defense named \"\" a number", "PUT", "/admin/defenses", `{"":1}`, 400, `""`, `"": must be a boolean, got a JSON number`, ""},
		{"unknown field", "PUT", "/admin/limits", `{"clases":{}}`, 400, "clases", "clases: unknown field", ""},
		{"a field in another case", "PUT", "/admin/limits", `{"Token_Budget":5}`, 400, "Token_Budget", "Token_Budget: unknown field (names are exact: token_budget)", ""},
		{"a class field in another case", "PUT", "/admin/limits", `{"classes":{"ai":{"LIMIT":5}}}`, 400, "classes.ai.LIMIT", "names are exact: limit", ""},
		{"a field given twice", "PUT", "/admin/limits", `{"token_budget":5,"token_budget":6}`, 400, "token_budget", "token_budget: given twice", ""},
		{"a defense given twice", "PUT", "/admin/defenses", `{"guard":true,"guard":false}`, 400, "guard", "given twice", ""},
		{"not JSON", "PUT", "/admin/level", `{level}`, 400, "", "malformed JSON: invalid character", ""},
		{"body an array", "PUT", "/admin/limits", `[]`, 400, "", "the body must be an object, got a JSON array", ""},
		{"body a string", "PUT", "/admin/defenses", `"x"`, 400, "", "the body must be an object, got a JSON string", ""},
		{"state with PUT", "PUT", "/admin/state", `{}`, 405, "", "/admin/state takes GET, not PUT", "GET"},
		{"limits with GET", "GET", "/admin/limits", "", 405, "", "/admin/limits takes PUT, not GET", "PUT"},
		{"limits with POST", "POST", "/admin/limits", `{}`, 405, "", "takes PUT", "PUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := admin(t, s, tc.method, tc.path, tc.body)
			var e wire.ErrorBody
			_ = json.Unmarshal(a.body, &e)
			if a.status != tc.status || e.Error.Field != tc.field || !strings.Contains(e.Error.Message, tc.msg) || a.header.Get("Allow") != tc.allow {
				t.Fatalf("%v Allow %q; want %d field %q message with %q Allow %q", a, a.header.Get("Allow"), tc.status, tc.field, tc.msg, tc.allow)
			}
		})
	}
	// Good patches apply and show in the state.
	a := admin(t, s, "PUT", "/admin/limits", `{"classes":{"ai":{"algorithm":"aimd","limit":20,"queue_size":7,"queue_timeout_ms":250}},"token_budget":5000,"ratelimit":{"rules":[{"tenant":"*","route":"*","algorithm":"sliding_window","limit":5,"window_ms":1000}]}}`)
	var st State
	if err := json.Unmarshal(a.body, &st); err != nil || a.status != 200 {
		t.Fatalf("%v", a)
	}
	ai := st.Limits.Classes["ai"]
	if ai.Algorithm != "aimd" || ai.ConfiguredLmt != 20 || ai.QueueSize != 7 || ai.QueueTimeoutMs != 250 || st.Limits.TokenBudget != 5000 || len(st.Limits.RateLimit.Rules) != 1 || st.Limits.RateLimit.Rules[0].Cost != "requests" {
		t.Errorf("state after patch: %+v", st.Limits)
	}
	a = admin(t, s, "PUT", "/admin/defenses", `{"bulkhead":false,"retry":false}`)
	_ = json.Unmarshal(a.body, &st)
	if st.Defenses["bulkhead"] || st.Defenses["retry"] || !st.Defenses["guard"] {
		t.Errorf("defenses %v", st.Defenses)
	}
	if fams := scrape(t, s); counterSum(fams, "levee_defense_enabled", map[string]string{"defense": "bulkhead"}) != 0 ||
		counterSum(fams, "levee_defense_enabled", map[string]string{"defense": "guard"}) != 1 {
		t.Errorf("levee_defense_enabled disagrees with the state")
	}
	admin(t, s, "PUT", "/admin/pressure", `{"ballast_mb":1}`)
	a = admin(t, s, "PUT", "/admin/pressure", `{"churn_mb_per_s":2}`) // a patch: ballast stays
	_ = json.Unmarshal(a.body, &st)
	if got := (pressure.Config{}).Apply(st.Pressure); a.status != 200 || got.BallastMB != 1 || got.ChurnMBPerS != 2 {
		t.Errorf("pressure: %v", a)
	}
	a = admin(t, s, "PUT", "/admin/pressure", `{"churn_mb_per_s":0,"ballast_mb":0}`)
	_ = json.Unmarshal(a.body, &st)
	if got := (pressure.Config{}).Apply(st.Pressure); got != (pressure.Config{}) || st.Pressure.CPUHogDuty == nil {
		t.Errorf("zeros did not turn the pressure off: %+v", st.Pressure)
	}
}

func TestShutdownDrains(t *testing.T) {
	fm := newFakeModel(t, 1, 300*time.Millisecond)
	s, err := Start(t.Context(), testConfig(fm.addr()), testToken)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan answer, 1)
	go func() { done <- call(t, "POST", "http://"+s.Addr()+"/v1/predict", "k1", predictBody) }()
	eventually(t, 2*time.Second, func() bool { return fm.inflight.Load() == 1 }, "request in flight")
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.status != 200 || a.outcome != "ok" {
		t.Errorf("in-flight request during drain: %v", a)
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Errorf("still accepting after shutdown")
	}
}

func TestPanicIsRecoveredAndCounted(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	cfg := testConfig(fm.addr())
	cfg.RateLimit.Rules = []RuleConfig{{Tenant: "*", Route: "*", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 9, Window: time.Second}, Cost: CostRequests}}
	s := startServer(t, cfg, WithStore(panicStore{}))
	a := call(t, "POST", "http://"+s.Addr()+"/v1/predict", "k1", predictBody)
	if a.status != 500 || a.outcome != "error" {
		t.Fatalf("%v", a)
	}
	if got := counterSum(scrape(t, s), "levee_requests_total", map[string]string{"outcome": "error", "route": "predict"}); got != 1 {
		t.Errorf("panicking request counted %v times", got)
	}
	if a := call(t, "GET", "http://"+s.Addr()+"/healthz", "", ""); a.status != 200 {
		t.Errorf("gateway unhealthy after a panic: %v", a)
	}
}

func TestAllDefensesOffIsAPassThrough(t *testing.T) {
	// One slot of 50 ms: 20 requests at once queue at the model without
	// bound; with no defense the gateway forwards every one, sheds none,
	// and the late ones run out of their 300 ms deadline (collapse).
	fm := newFakeModel(t, 1, 50*time.Millisecond)
	cfg := testConfig(fm.addr())
	cfg.Defenses = wire.AllDefenses(false)
	cfg.Classes.AI = staticClass(1, 1, 1, 0, time.Millisecond)
	cfg.TokenBudget = 1
	cfg.RateLimit.Rules = []RuleConfig{{Tenant: "*", Route: "*", Rule: ratelimit.Rule{Algorithm: ratelimit.SlidingWindow, Limit: 1, Window: time.Minute}, Cost: CostRequests}}
	s := startServer(t, cfg)
	admin(t, s, "PUT", "/admin/level", `{"level":"black"}`)
	const n = 20
	results := make(chan answer, n)
	for range n {
		go func() {
			results <- call(t, "POST", "http://"+s.Addr()+"/v1/predict", "k2", predictBody, wire.HeaderDeadlineMs, "300")
		}()
	}
	got := map[string]int{}
	for range n {
		a := <-results
		got[a.outcome]++
	}
	if got["ok"]+got["timeout"] != n || got["ok"] == 0 || got["timeout"] == 0 {
		t.Errorf("outcomes %v; want only ok and timeout, some of each", got)
	}
	if a := fm.arrivals.Load(); a != n {
		t.Errorf("%d of %d requests reached the model", a, n)
	}
	if m := fm.maxInfl.Load(); m < n/2 {
		t.Errorf("at most %d requests at the model at once: something still limits", m)
	}
}
