package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/httpbody/httpbodytest"
	"github.com/levee-lab/levee/internal/syncbuf"
	"github.com/levee-lab/levee/internal/wire"
)

// Issue 12's holes, each with a test that fails on the code before it.

// TestSlowUnreadBodyIsCut: a body no handler reads (health, a GET route,
// the export, an unauthenticated admin call) trickled at one byte per
// 50 ms is cut once the header timeout passes, long before its 4 s are
// over. Before the fix net/http drained it for as long as it came.
func TestSlowUnreadBodyIsCut(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	cfg := testConfig(fm.addr())
	cfg.ReadHeaderTimeout = 300 * time.Millisecond
	s := startServer(t, cfg)
	const n, gap = 80, 50 * time.Millisecond
	for _, tc := range []struct{ name, addr, method, path, hdr string }{
		{"healthz", s.Addr(), "POST", "/healthz", ""},
		{"standard", s.Addr(), "GET", "/v1/standard/x", "Authorization: Bearer k1\r\n"},
		{"export", s.Addr(), "GET", "/v1/export?rows=1", "Authorization: Bearer k1\r\n"},
		{"admin without token", s.AdminAddr(), "PUT", "/admin/defenses", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !httpbodytest.Trickle(t, tc.addr, tc.method, tc.path, tc.hdr, n, gap) {
				t.Fatalf("%s %s: a %d-byte body trickled over %v held the connection to its end", tc.method, tc.path, n, time.Duration(n)*gap)
			}
		})
	}
}

// TestAdminDurationsRangeChecked: a millisecond count that a duration
// cannot hold is a 400 naming the field, not a wrapped-around 0.45 ms.
func TestAdminDurationsRangeChecked(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	s := startServer(t, testConfig(fm.addr()))
	for _, tc := range []struct{ body, field string }{
		{`{"classes":{"ai":{"queue_timeout_ms":18446744073710}}}`, "classes.ai.queue_timeout_ms"},
		{`{"classes":{"ai":{"queue_timeout_ms":-5}}}`, "classes.ai.queue_timeout_ms"},
		{`{"ratelimit":{"rules":[{"tenant":"*","route":"*","algorithm":"sliding_window","limit":5,"window_ms":18446744073710}]}}`, "ratelimit.rules[0].window_ms"},
		{`{"token_budget":1099511627777}`, "token_budget"},
		{`{"max_subcalls_inflight":100001}`, "max_subcalls_inflight"},
	} {
		a := admin(t, s, "PUT", "/admin/limits", tc.body)
		if a.status != 400 || a.errorField() != tc.field {
			t.Errorf("%s: %v; want 400 naming %s", tc.body, a, tc.field)
		}
	}
	if got := s.G.Config().Classes.AI.QueueTimeout; got != DefaultConfig().Classes.AI.QueueTimeout {
		t.Errorf("queue timeout changed to %v by refused patches", got)
	}
}

// TestAdminLimitsShowInConfig: a limit the admin API changed is in the
// config the gateway reports, as Config promises.
func TestAdminLimitsShowInConfig(t *testing.T) {
	fm := newFakeModel(t, 4, 0)
	s := startServer(t, testConfig(fm.addr()))
	if a := admin(t, s, "PUT", "/admin/limits", `{"max_subcalls_inflight":7,"token_budget":5000}`); a.status != 200 {
		t.Fatalf("PUT /admin/limits: %v", a)
	}
	c := s.G.Config()
	if c.Agent.MaxSubcallsInflight != 7 || c.TokenBudget != 5000 {
		t.Errorf("Config() after the patch: max_subcalls_inflight %d (want 7), token_budget %d (want 5000)", c.Agent.MaxSubcallsInflight, c.TokenBudget)
	}
}

// TestConfigUpperBounds: every size, count and duration has an upper
// bound, named in the error with the field.
func TestConfigUpperBounds(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(c *Config)
	}{
		{"body_limit_bytes", func(c *Config) { c.BodyLimitBytes = 1 << 40 }},
		{"max_header_bytes", func(c *Config) { c.MaxHeaderBytes = 1 << 30 }},
		{"read_header_timeout", func(c *Config) { c.ReadHeaderTimeout = 1 << 62 }},
		{"routes.chat.timeout", func(c *Config) { c.Routes.Chat.Timeout = 1000 * time.Hour }},
		{"agent.fan_out", func(c *Config) { c.Agent.FanOut = 1 << 20 }},
		{"agent.max_depth", func(c *Config) { c.Agent.MaxDepth = 1000 }},
		{"agent.max_subcalls_inflight", func(c *Config) { c.Agent.MaxSubcallsInflight = 1 << 30 }},
		{"agent.max_prompt_chars", func(c *Config) { c.Agent.MaxPromptChars = 1 << 30 }},
		{"token_budget", func(c *Config) { c.TokenBudget = 1 << 62 }},
		{"budget.max_request_tokens", func(c *Config) { c.Budget.MaxRequestTokens = c.TokenBudget }},
		{"classes.ai.max", func(c *Config) { c.Classes.AI.Limiter.Max = 1 << 30 }},
		{"classes.ai.queue_size", func(c *Config) { c.Classes.AI.QueueSize = 1 << 30 }},
		{"classes.ai.queue_timeout", func(c *Config) { c.Classes.AI.QueueTimeout = 1 << 62 }},
		{"stream.buffer_bytes", func(c *Config) { c.Stream.BufferBytes = 1 << 30 }},
		{"stream.export_max_rows", func(c *Config) { c.Stream.ExportMaxRows = 1 << 40 }},
		{"ratelimit.rules[0].window_ms", func(c *Config) {
			c.RateLimit.Rules = []RuleConfig{{Tenant: "*", Route: "*", WindowMs: 18446744073710}}
			c.RateLimit.Rules[0].Algorithm, c.RateLimit.Rules[0].Limit = "sliding_window", 5
		}},
		{"guard.backpressure_share.red", func(c *Config) { c.Guard.BackpressureShare.Red = 2 }},
	} {
		c := testConfig("127.0.0.1:1")
		tc.set(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: Validate() = %v", tc.field, err)
		}
	}
}

// TestAdminExposure: a non-loopback admin address needs the explicit
// opt-in (and the gateway then warns); the admin token has a minimum
// length, in the config and at Start.
func TestAdminExposure(t *testing.T) {
	c := testConfig("127.0.0.1:1")
	c.Admin = "0.0.0.0:0"
	var ce *ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Field != "admin" || !strings.Contains(ce.Msg, "admin_allow_remote") {
		t.Fatalf("non-loopback admin without opt-in: %v", err)
	}
	c.AdminToken = "short"
	c.Admin = "127.0.0.1:0"
	if err := c.Validate(); !errors.As(err, &ce) || ce.Field != "admin_token" {
		t.Fatalf("short admin token: %v", err)
	}
	fm := newFakeModel(t, 1, 0)
	cfg := testConfig(fm.addr())
	if _, err := Start(t.Context(), cfg, "short-token"); err == nil {
		t.Fatal("Start accepted an 11-character admin token")
	}
	cfg.Admin, cfg.AdminAllowRemote = "0.0.0.0:0", true
	var logs syncbuf.Buffer
	s := startServer(t, cfg, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if !strings.Contains(logs.String(), "beyond loopback") {
		t.Fatalf("no warning for an admin API beyond loopback; logs:\n%s", logs.String())
	}
	_, port, _ := net.SplitHostPort(s.AdminAddr())
	if a := admin(t, s, "GET", "/admin/state", ""); a.status != 200 {
		t.Fatalf("admin on %s: %v", port, a)
	}
}

// TestJSON404Everywhere: an unknown path outside /v1/ gets the contract's
// JSON error too (not net/http's plain text), and is not counted.
func TestJSON404Everywhere(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	s := startServer(t, testConfig(fm.addr()))
	for _, p := range []string{"/nope", "/", "/v2/chat"} {
		a := call(t, "GET", "http://"+s.Addr()+p, "k1", "")
		var e wire.ErrorBody
		if a.status != 404 || a.header.Get("Content-Type") != "application/json" || json.Unmarshal(a.body, &e) != nil || e.Error.Message == "" {
			t.Errorf("%s: %v", p, a)
		}
	}
	if got := counterSum(scrape(t, s), wire.MetricRequests, nil); got != 0 {
		t.Errorf("%s = %v after 404s outside /v1/, want 0", wire.MetricRequests, got)
	}
}

// TestShortBodyIsABadRequest: a client that sends less body than its
// Content-Length and half-closes, waiting for the answer, gets a 400 that
// says so and is counted an error, not a 504 timeout: the deadline did not
// pass, the body was short.
func TestShortBodyIsABadRequest(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	s := startServer(t, testConfig(fm.addr()))
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const part = `{"model":"m","messages":[`
	_, _ = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k2\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"+part)
	_ = conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a short body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "shorter than its Content-Length") {
		t.Errorf("short body: %d %s; want 400 saying the body is shorter than its Content-Length", resp.StatusCode, b)
	}
	eventually(t, 5*time.Second, func() bool {
		return counterSum(scrape(t, s), "levee_requests_total", map[string]string{"route": "chat", "outcome": "error"}) == 1
	}, "the short body counted as an error")
}

// TestAdminShortBodyIsABadRequest: decodeAdmin answers 413 only for a body
// over its limit; a body shorter than its Content-Length (the client
// half-closes) is a 400 that says so, as on the traffic routes.
func TestAdminShortBodyIsABadRequest(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	s := startServer(t, testConfig(fm.addr()))
	conn, err := net.Dial("tcp", s.AdminAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "PUT "+wire.PathAdminDefenses+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+testToken+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"guard\":")
	_ = conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a short admin body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "shorter than its Content-Length") || !strings.Contains(string(b), `"code":"`+wire.CodeInvalidRequest+`"`) {
		t.Errorf("short admin body: %d %s; want 400 saying the body is shorter than its Content-Length", resp.StatusCode, b)
	}
	big := `{"guard":true,"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	if a := admin(t, s, "PUT", wire.PathAdminDefenses, big); a.status != http.StatusRequestEntityTooLarge || a.errorCode() != wire.CodeRequestTooLarge {
		t.Errorf("admin body over 1 MiB: %v; want 413", a)
	}
}

// TestStrippedUsageLeavesNoBlankLine: the usage chunk the gateway asked
// for on a client's behalf goes with its event's blank line, so the
// client's stream is exactly its events: "data: …\n\n" each, no empty
// event where the usage chunk was.
func TestStrippedUsageLeavesNoBlankLine(t *testing.T) {
	const (
		chunk = `data: {"choices":[{"delta":{"content":"tok0 "}}]}`
		usage = `data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`
	)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if !strings.Contains(string(b), `"include_usage":true`) {
			_, _ = io.WriteString(w, chunk+"\n\ndata: [DONE]\n\n")
			return
		}
		_, _ = io.WriteString(w, chunk+"\n\n"+usage+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(model.Close)
	s := startServer(t, testConfig(strings.TrimPrefix(model.URL, "http://")))
	a := call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k2", `{"model":"m","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`)
	if want := chunk + "\n\ndata: [DONE]\n\n"; a.status != 200 || string(a.body) != want {
		t.Fatalf("stream %v\nwant %q", a, want)
	}
	a = call(t, "POST", "http://"+s.Addr()+"/v1/chat/completions", "k2", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`)
	if want := chunk + "\n\n" + usage + "\n\ndata: [DONE]\n\n"; a.status != 200 || string(a.body) != want {
		t.Fatalf("the client's own usage: stream %v\nwant %q", a, want)
	}
}

// TestAdminTokenACallerCanSend: an admin token with whitespace at an edge
// would never match (net/http trims the header value): Start and the
// config refuse it instead of serving an admin API nobody can use.
func TestAdminTokenACallerCanSend(t *testing.T) {
	fm := newFakeModel(t, 1, 0)
	cfg := testConfig(fm.addr())
	if s, err := Start(t.Context(), cfg, testToken+" "); err == nil {
		a := admin(t, s, "GET", "/admin/state", "", testToken+" ")
		_ = s.Shutdown(t.Context())
		t.Fatalf("Start accepted an admin token ending in a space; sending it exactly: %v", a)
	}
	cfg.AdminToken = " " + testToken
	var ce *ConfigError
	if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != "admin_token" {
		t.Errorf("admin_token with a leading space: %v", err)
	}
}
