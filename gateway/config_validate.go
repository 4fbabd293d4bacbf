package gateway

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/gateway/upstream"
	"github.com/levee-lab/levee/internal/wire"
)

func fieldErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every field and returns a *ConfigError naming the first
// invalid one (by its YAML path).
func (c *Config) Validate() error {
	if c.Listen == "" {
		return fieldErr("listen", "must not be empty")
	}
	if err := c.validateServer(); err != nil {
		return err
	}
	seen := make(map[string]int, len(c.Keys))
	for i, k := range c.Keys {
		p := fmt.Sprintf("keys[%d]", i)
		if k.Key == "" {
			return fieldErr(p+".key", "must not be empty")
		}
		if msg := wire.KeyProblem(k.Key); msg != "" {
			return fieldErr(p+".key", "%s: no request could carry it", msg)
		}
		if j, dup := seen[k.Key]; dup {
			return fieldErr(p+".key", "duplicate of keys[%d]", j)
		}
		seen[k.Key] = i
		if k.Tenant == "" {
			return fieldErr(p+".tenant", "must not be empty")
		}
		if _, ok := wire.PriorityIndex(k.Priority); !ok {
			return fieldErr(p+".priority", "must be P0, P1 or P2 (got %q)", k.Priority)
		}
	}
	switch c.UnknownKey {
	case UnknownKeyAnonymous, UnknownKeyReject:
	default:
		return fieldErr("unknown_key", "must be %q or %q (got %q)", UnknownKeyAnonymous, UnknownKeyReject, c.UnknownKey)
	}
	if c.AnonymousTenant == "" {
		return fieldErr("anonymous_tenant", "must not be empty")
	}
	for _, r := range []struct {
		name string
		rc   RouteConfig
	}{{wire.RouteChat, c.Routes.Chat}, {wire.RoutePredict, c.Routes.Predict}, {wire.RouteAgent, c.Routes.Agent}, {wire.RouteExport, c.Routes.Export}, {wire.RouteStandard, c.Routes.Standard},
		{wire.RouteCompletions, c.Routes.Completions}, {wire.RouteEmbeddings, c.Routes.Embeddings.RouteConfig}} {
		if r.rc.Timeout <= 0 || r.rc.Timeout > maxRouteTimeout {
			return fieldErr("routes."+r.name+".timeout", "must be in (0, %s] (got %s)", maxRouteTimeout, r.rc.Timeout)
		}
	}
	if n := c.Routes.Embeddings.AnswerLimitBytes; n < 1 || n > maxAnswerLimit {
		return fieldErr("routes."+wire.RouteEmbeddings+".answer_limit_bytes", "must be in [1, %d] (got %d)", int64(maxAnswerLimit), n)
	}
	if err := c.RateLimit.validate(); err != nil {
		return err
	}
	if err := checkRuleTenants(c.RateLimit.Rules, newKeyTable(c).tenants); err != nil {
		return err
	}
	if err := c.Guard.validate(); err != nil {
		return err
	}
	for _, cl := range []struct {
		name string
		cc   admit.BulkheadConfig
	}{{wire.ClassAI, c.Classes.AI}, {wire.ClassAgent, c.Classes.Agent}, {wire.ClassStream, c.Classes.Stream}, {wire.ClassStandard, c.Classes.Standard}} {
		if err := validateClass("classes."+cl.name, cl.cc); err != nil {
			return err
		}
	}
	if err := c.validateBudget(); err != nil {
		return err
	}
	if err := c.Agent.validate(); err != nil {
		return err
	}
	if err := validateUpstream(c.Upstream); err != nil {
		return err
	}
	return c.Stream.validate()
}

func (r *RateLimitConfig) validate() error {
	s := r.Store
	switch s.Kind {
	case wire.StoreLocal:
	case wire.StoreRedis:
		if s.URL == "" {
			return fieldErr("ratelimit.store.url", "must be set when kind is redis")
		}
	default:
		return fieldErr("ratelimit.store.kind", "must be local or redis (got %q)", s.Kind)
	}
	if s.Timeout <= 0 || s.Timeout > maxStoreTimeout {
		return fieldErr("ratelimit.store.timeout", "must be in (0, %s] (got %s)", maxStoreTimeout, s.Timeout)
	}
	if !(s.Share > 0 && s.Share <= 1) {
		return fieldErr("ratelimit.store.share", "must be in (0, 1] (got %g)", s.Share)
	}
	type pair struct{ t, r string }
	seen := map[pair]int{}
	for i, rule := range r.Rules {
		p := fmt.Sprintf("ratelimit.rules[%d]", i)
		if rule.Tenant == "" {
			return fieldErr(p+".tenant", "must be a tenant or \"*\"")
		}
		switch rule.Route {
		case "*", wire.RouteChat, wire.RoutePredict, wire.RouteAgent, wire.RouteExport, wire.RouteStandard, wire.RouteCompletions, wire.RouteEmbeddings:
		default:
			return fieldErr(p+".route", "must be chat, predict, agent, export, standard, completions, embeddings or \"*\" (got %q)", rule.Route)
		}
		if j, dup := seen[pair{rule.Tenant, rule.Route}]; dup {
			return fieldErr(p+".route", "same tenant and route as ratelimit.rules[%d]", j)
		}
		seen[pair{rule.Tenant, rule.Route}] = i
		switch rule.Cost {
		case CostRequests, CostTokens, "":
		default:
			return fieldErr(p+".cost", "must be requests or tokens (got %q)", rule.Cost)
		}
		switch rule.Algorithm {
		case ratelimit.SlidingWindow:
			if rule.Limit < 1 || rule.Limit > maxRuleUnits {
				return fieldErr(p+".limit", "must be ≥ 1 and ≤ %d (got %d)", int64(maxRuleUnits), rule.Limit)
			}
			if rule.Window != 0 && rule.WindowMs != 0 {
				return fieldErr(p+".window_ms", "set window or window_ms, not both")
			}
			if rule.WindowMs < 0 || rule.WindowMs > ratelimit.MaxWindow.Milliseconds() {
				return fieldErr(p+".window_ms", "must be in [%d, %d] (got %d)", ratelimit.MinWindow.Milliseconds(), ratelimit.MaxWindow.Milliseconds(), rule.WindowMs)
			}
			if w := rule.window(); w < ratelimit.MinWindow || w > ratelimit.MaxWindow {
				return fieldErr(p+".window", "must be in [%s, %s] (got %s)", ratelimit.MinWindow, ratelimit.MaxWindow, w)
			}
		case ratelimit.TokenBucket:
			if !(rule.ReplenishRate > 0) || rule.ReplenishRate > maxRuleUnits {
				return fieldErr(p+".replenish_rate", "must be in (0, %g] (got %g)", float64(maxRuleUnits), rule.ReplenishRate)
			}
			if rule.Burst < 1 || rule.Burst > maxRuleUnits {
				return fieldErr(p+".burst", "must be ≥ 1 and ≤ %d (got %d)", int64(maxRuleUnits), rule.Burst)
			}
			if secs := float64(rule.Burst) / rule.ReplenishRate; secs > ratelimit.MaxRefill.Seconds() {
				return fieldErr(p+".replenish_rate", "must fill the burst of %d within %s (burst / replenish_rate ≤ %g s; got %.3g s): a rate of at least %.3g",
					rule.Burst, ratelimit.MaxRefill, ratelimit.MaxRefill.Seconds(), secs, float64(rule.Burst)/ratelimit.MaxRefill.Seconds())
			}
		default:
			return fieldErr(p+".algorithm", "must be sliding_window or token_bucket (got %q)", rule.Algorithm)
		}
	}
	return nil
}

func (g *GuardConfig) validate() error {
	if g.Interval <= 0 || g.Interval > maxServerTimeout {
		return fieldErr("guard.interval", "must be in (0, %s] (got %s)", maxServerTimeout, g.Interval)
	}
	if g.ProbeTick <= 0 || g.ProbeTick > maxServerTimeout {
		return fieldErr("guard.probe_tick", "must be in (0, %s] (got %s)", maxServerTimeout, g.ProbeTick)
	}
	if g.Cooldown < 0 || g.Cooldown > maxServerTimeout {
		return fieldErr("guard.cooldown", "must be in [0, %s] (got %s)", maxServerTimeout, g.Cooldown)
	}
	if g.BackpressureTTL <= 0 || g.BackpressureTTL > maxServerTimeout {
		return fieldErr("guard.backpressure_ttl", "must be in (0, %s] (got %s)", maxServerTimeout, g.BackpressureTTL)
	}
	for _, x := range []struct {
		name string
		v    float64
	}{{"yellow", g.BackpressureShare.Yellow}, {"red", g.BackpressureShare.Red}, {"black", g.BackpressureShare.Black}} {
		if x.v > 1 {
			return fieldErr("guard.backpressure_share."+x.name, "must be a share in [0, 1] (got %g)", x.v)
		}
	}
	for _, w := range []struct {
		name string
		w    Watermarks
	}{
		{"lag_probe_p99_ms", g.LagProbeP99Ms}, {"sched_latency_p99_ms", g.SchedLatencyP99Ms},
		{"gc_pause_p99_ms", g.GCPauseP99Ms}, {"heap_mb", g.HeapMB},
		{"inflight_ratio", g.InflightRatio}, {"queue_fill", g.QueueFill},
		{"upstream_latency_ratio", g.UpstreamLatencyRatio}, {"backpressure_share", g.BackpressureShare},
	} {
		if err := w.w.validate("guard." + w.name); err != nil {
			return err
		}
	}
	return nil
}

func (w Watermarks) validate(path string) error {
	vals := []struct {
		name string
		v    float64
	}{{"yellow", w.Yellow}, {"red", w.Red}, {"black", w.Black}}
	prev := 0.0
	for _, x := range vals {
		if x.v < 0 || math.IsNaN(x.v) || math.IsInf(x.v, 0) {
			return fieldErr(path+"."+x.name, "must be ≥ 0 and finite (got %g)", x.v)
		}
		if x.v == 0 {
			continue
		}
		if x.v < prev {
			return fieldErr(path+"."+x.name, "must be ≥ the lower watermark %g (got %g)", prev, x.v)
		}
		prev = x.v
	}
	return nil
}

// validateClass checks one bulkhead at path ("classes.ai"): the gateway's
// own rules first (an explicit min ≥ 1 and min ≤ limit ≤ max even for a
// static limit, which the admin API may change; a queue timeout), then
// admit's for the adaptive limiters' tuning.
func validateClass(path string, cc admit.BulkheadConfig) error {
	l := cc.Limiter
	switch l.Algorithm {
	case admit.AlgoStatic, admit.AlgoAIMD, admit.AlgoGradient:
	default:
		return fieldErr(path+".algorithm", "must be static, aimd or gradient (got %q)", l.Algorithm)
	}
	if l.Min < 1 {
		return fieldErr(path+".min", "must be ≥ 1 (got %d)", l.Min)
	}
	if l.Max < l.Min || l.Max > maxClassLimit {
		return fieldErr(path+".max", "must be in [min=%d, %d] (got %d)", l.Min, maxClassLimit, l.Max)
	}
	if l.Limit < l.Min || l.Limit > l.Max {
		return fieldErr(path+".limit", "must be in [min, max] = [%d, %d] (got %d)", l.Min, l.Max, l.Limit)
	}
	if cc.QueueSize < 0 || cc.QueueSize > maxQueueSize {
		return fieldErr(path+".queue_size", "must be in [0, %d] (got %d)", maxQueueSize, cc.QueueSize)
	}
	if cc.QueueTimeout <= 0 || cc.QueueTimeout > maxQueueTimeout {
		return fieldErr(path+".queue_timeout", "must be in (0, %s] (got %s)", maxQueueTimeout, cc.QueueTimeout)
	}
	if l.TimeoutMs < 0 || l.TimeoutMs > int(maxQueueTimeout.Milliseconds()) {
		return fieldErr(path+".timeout_ms", "must be in [0, %d] (got %d)", maxQueueTimeout.Milliseconds(), l.TimeoutMs)
	}
	if err := cc.Validate(); err != nil {
		return fieldErr(path, "%v", err)
	}
	return nil
}

func (a *AgentConfig) validate() error {
	switch {
	case a.FanOut < 1 || a.FanOut > maxFanOut:
		return fieldErr("agent.fan_out", "must be in [1, %d] (got %d)", maxFanOut, a.FanOut)
	case a.YellowFanOut < 1 || a.YellowFanOut > a.FanOut:
		return fieldErr("agent.yellow_fan_out", "must be in [1, fan_out=%d] (got %d)", a.FanOut, a.YellowFanOut)
	case a.RedFanOut < 1 || a.RedFanOut > a.YellowFanOut:
		return fieldErr("agent.red_fan_out", "must be in [1, yellow_fan_out=%d] (got %d)", a.YellowFanOut, a.RedFanOut)
	case a.MaxDepth < 1 || a.MaxDepth > maxAgentDepth:
		return fieldErr("agent.max_depth", "must be in [1, %d] (got %d)", maxAgentDepth, a.MaxDepth)
	case a.YellowDepth < 1 || a.YellowDepth > a.MaxDepth:
		return fieldErr("agent.yellow_depth", "must be in [1, max_depth=%d] (got %d)", a.MaxDepth, a.YellowDepth)
	case !(a.RedDropShare >= 0 && a.RedDropShare <= 1):
		return fieldErr("agent.red_drop_share", "must be in [0, 1] (got %g)", a.RedDropShare)
	case a.ComplexTokens < 0 || a.ComplexTokens > maxTokenBudget:
		return fieldErr("agent.complex_tokens", "must be in [0, %d] (got %d)", int64(maxTokenBudget), a.ComplexTokens)
	case !(a.BlackNodesDown >= 0 && a.BlackNodesDown <= 1):
		return fieldErr("agent.black_nodes_down", "must be in [0, 1] (got %g)", a.BlackNodesDown)
	case a.MaxSubcallsInflight < 1 || a.MaxSubcallsInflight > maxSubcalls:
		return fieldErr("agent.max_subcalls_inflight", "must be in [1, %d] (got %d)", maxSubcalls, a.MaxSubcallsInflight)
	case a.QueueSize < 0 || a.QueueSize > maxQueueSize:
		return fieldErr("agent.queue_size", "must be in [0, %d] (got %d)", maxQueueSize, a.QueueSize)
	case a.MaxPromptChars < 1 || a.MaxPromptChars > maxBodyLimit:
		return fieldErr("agent.max_prompt_chars", "must be in [1, %d] (got %d)", maxBodyLimit, a.MaxPromptChars)
	}
	return nil
}

// validateUpstream checks the pool: the gateway's own rules (node
// addresses it normalizes, explicit durations and counts), then the
// pool's own Validate and ValidateExplicit on the normalized nodes for
// whatever else upstream.Config holds.
func validateUpstream(u upstream.Config) error {
	if len(u.Nodes) == 0 {
		return fieldErr("upstream.nodes", "must name at least one model node")
	}
	seen := map[string]int{}
	for i, n := range u.Nodes {
		p := fmt.Sprintf("upstream.nodes[%d]", i)
		if _, err := NormalizeNode(n); err != nil {
			return fieldErr(p, "%v", err)
		}
		if j, dup := seen[n]; dup {
			return fieldErr(p, "duplicate of upstream.nodes[%d]", j)
		}
		seen[n] = i
	}
	if u.HealthInterval <= 0 {
		return fieldErr("upstream.health_interval", "must be > 0 (got %s)", u.HealthInterval)
	}
	if !strings.HasPrefix(u.HealthPath, "/") {
		return fieldErr("upstream.health_path", "must start with / (got %q)", u.HealthPath)
	}
	if u.HealthTimeout <= 0 {
		return fieldErr("upstream.health_timeout", "must be > 0 (got %s)", u.HealthTimeout)
	}
	if u.UnhealthyThreshold < 1 {
		return fieldErr("upstream.unhealthy_threshold", "must be ≥ 1 (got %d)", u.UnhealthyThreshold)
	}
	b := u.Breaker
	if !(b.FailureRatio > 0 && b.FailureRatio <= 1) {
		return fieldErr("upstream.breaker.failure_ratio", "must be in (0, 1] (got %g)", b.FailureRatio)
	}
	if b.MinRequests < 1 {
		return fieldErr("upstream.breaker.min_requests", "must be ≥ 1 (got %d)", b.MinRequests)
	}
	if b.Window <= 0 {
		return fieldErr("upstream.breaker.window", "must be > 0 (got %s)", b.Window)
	}
	if b.OpenFor <= 0 {
		return fieldErr("upstream.breaker.open_for", "must be > 0 (got %s)", b.OpenFor)
	}
	if b.HalfOpenProbes < 1 {
		return fieldErr("upstream.breaker.half_open_probes", "must be ≥ 1 (got %d)", b.HalfOpenProbes)
	}
	r := u.RetryBudget
	if !(r.Ratio > 0 && r.Ratio <= 1) {
		return fieldErr("upstream.retry_budget.ratio", "must be in (0, 1] (got %g)", r.Ratio)
	}
	if !(r.MinPerSecond >= 0) || math.IsInf(r.MinPerSecond, 0) {
		return fieldErr("upstream.retry_budget.min_per_second", "must be ≥ 0 (got %g)", r.MinPerSecond)
	}
	if r.TTL <= 0 {
		return fieldErr("upstream.retry_budget.ttl", "must be > 0 (got %s)", r.TTL)
	}
	if u.MinServiceTime < 0 {
		return fieldErr("upstream.min_service_time", "must be ≥ 0 (got %s)", u.MinServiceTime)
	}
	if u.MaxIdleConnsPerHost < 1 {
		return fieldErr("upstream.max_idle_conns_per_host", "must be ≥ 1 (got %d)", u.MaxIdleConnsPerHost)
	}
	if u.DialTimeout <= 0 {
		return fieldErr("upstream.dial_timeout", "must be > 0 (got %s)", u.DialTimeout)
	}
	if u.IdleConnTimeout <= 0 || u.IdleConnTimeout > maxServerTimeout {
		return fieldErr("upstream.idle_conn_timeout", "must be in (0, %s] (got %s)", maxServerTimeout, u.IdleConnTimeout)
	}
	// DefaultConfig sets every pool setting, so a zero left after decoding
	// was written in the file: ValidateExplicit refuses it rather than let
	// the pool read it as "default".
	nu := normalizedUpstream(u)
	for _, check := range []func() error{nu.Validate, nu.ValidateExplicit} {
		if err := check(); err != nil {
			var fe *upstream.FieldError
			if errors.As(err, &fe) {
				return fieldErr("upstream."+fe.Field, "%s", fe.Msg)
			}
			return fieldErr("upstream", "%v", err)
		}
	}
	return nil
}

// normalizedUpstream returns u with its nodes as base URLs (NormalizeNode);
// nodes that do not normalize are left as they are.
func normalizedUpstream(u upstream.Config) upstream.Config {
	nodes := make([]string, len(u.Nodes))
	for i, n := range u.Nodes {
		if nodes[i], _ = NormalizeNode(n); nodes[i] == "" {
			nodes[i] = n
		}
	}
	u.Nodes = nodes
	return u
}

func (s *StreamConfig) validate() error {
	if s.BufferBytes < 512 || s.BufferBytes > maxStreamBuffer {
		return fieldErr("stream.buffer_bytes", "must be in [512, %d] (got %d)", maxStreamBuffer, s.BufferBytes)
	}
	if s.WriteTimeout <= 0 || s.WriteTimeout > maxServerTimeout {
		return fieldErr("stream.write_timeout", "must be in (0, %s] (got %s)", maxServerTimeout, s.WriteTimeout)
	}
	if s.ExportRows < 1 {
		return fieldErr("stream.export_rows", "must be ≥ 1 (got %d)", s.ExportRows)
	}
	if s.ExportMaxRows < s.ExportRows || s.ExportMaxRows > maxExportRows {
		return fieldErr("stream.export_max_rows", "must be in [export_rows=%d, %d] (got %d)", s.ExportRows, maxExportRows, s.ExportMaxRows)
	}
	if s.ExportRowBytes < 16 || s.ExportRowBytes > maxExportRowBytes {
		return fieldErr("stream.export_row_bytes", "must be in [16, %d] (got %d)", maxExportRowBytes, s.ExportRowBytes)
	}
	return nil
}

// NormalizeNode turns a node address into the base URL the gateway
// appends its paths to (/v1/chat/completions, the health path): "host:port"
// or "http://host:port" → "http://host:port"; an http:// or https:// URL
// may name no port (the scheme's) and may carry a path prefix, for a
// backend that serves the API under one (http://host/openai →
// http://host/openai/v1/chat/completions). Trailing slashes go. Refused,
// with what to write instead: a path ending in /v1, the base URL OpenAI's
// SDKs take (https://api.openai.com/v1), since the gateway appends /v1/…
// itself and would call /v1/v1/chat/completions; a query or fragment; and
// user:password, which the logs and the node label would show (a
// backend's key goes in upstream.headers).
func NormalizeNode(n string) (string, error) {
	s := strings.TrimSpace(n)
	if s == "" {
		return "", errors.New("empty node address")
	}
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		return normalizeNodeURL(n, s)
	}
	s = strings.TrimRight(s, "/")
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 || strings.ContainsAny(s, "/ ") {
		return "", fmt.Errorf("node %q must be host:port or an http:// or https:// URL", n)
	}
	if p, err := strconv.Atoi(s[i+1:]); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("node %q has an invalid port", n)
	}
	return "http://" + s, nil
}

// normalizeNodeURL is NormalizeNode of s, node n trimmed, which starts
// with http:// or https://.
func normalizeNodeURL(n, s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("node %q is not a URL: %w", n, err)
	}
	switch {
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("node %q has no host", n)
	case u.User != nil:
		return "", fmt.Errorf("node %q carries credentials, which the logs and metrics would show: put the backend's key in upstream.headers", n)
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, "?#"):
		return "", fmt.Errorf("node %q: a base URL takes no query or fragment", n)
	}
	if p := u.Port(); p != "" {
		if v, err := strconv.Atoi(p); err != nil || v < 1 || v > 65535 {
			return "", fmt.Errorf("node %q has an invalid port", n)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("node %q has an empty port", n)
	}
	base := strings.TrimRight(s, "/")
	if strings.HasSuffix(base, "/v1") {
		return "", fmt.Errorf("node %q ends in /v1: the gateway appends /v1/chat/completions (and its other /v1 paths) itself; give %q", n, strings.TrimSuffix(base, "/v1"))
	}
	return base, nil
}
