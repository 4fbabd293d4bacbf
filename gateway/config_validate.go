package gateway

import (
	"errors"
	"fmt"
	"math"
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
	if c.Admin == "" {
		return fieldErr("admin", "must not be empty")
	}
	if c.BodyLimitBytes < 1 {
		return fieldErr("body_limit_bytes", "must be ≥ 1 (got %d)", c.BodyLimitBytes)
	}
	if c.ReadHeaderTimeout <= 0 {
		return fieldErr("read_header_timeout", "must be > 0 (got %s)", c.ReadHeaderTimeout)
	}
	if c.MaxHeaderBytes < 1024 {
		return fieldErr("max_header_bytes", "must be ≥ 1024 (got %d)", c.MaxHeaderBytes)
	}
	if c.IdleTimeout <= 0 {
		return fieldErr("idle_timeout", "must be > 0 (got %s)", c.IdleTimeout)
	}
	if c.DrainTimeout <= 0 {
		return fieldErr("drain_timeout", "must be > 0 (got %s)", c.DrainTimeout)
	}
	seen := make(map[string]int, len(c.Keys))
	for i, k := range c.Keys {
		p := fmt.Sprintf("keys[%d]", i)
		if k.Key == "" {
			return fieldErr(p+".key", "must not be empty")
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
	}{{wire.RouteChat, c.Routes.Chat}, {wire.RoutePredict, c.Routes.Predict}, {wire.RouteAgent, c.Routes.Agent}, {wire.RouteExport, c.Routes.Export}, {wire.RouteStandard, c.Routes.Standard}} {
		if r.rc.Timeout <= 0 {
			return fieldErr("routes."+r.name+".timeout", "must be > 0 (got %s)", r.rc.Timeout)
		}
	}
	if err := c.RateLimit.validate(); err != nil {
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
	if c.TokenBudget < 1 {
		return fieldErr("token_budget", "must be ≥ 1 (got %d)", c.TokenBudget)
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
	if s.Timeout <= 0 {
		return fieldErr("ratelimit.store.timeout", "must be > 0 (got %s)", s.Timeout)
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
		case "*", wire.RouteChat, wire.RoutePredict, wire.RouteAgent, wire.RouteExport, wire.RouteStandard:
		default:
			return fieldErr(p+".route", "must be chat, predict, agent, export, standard or \"*\" (got %q)", rule.Route)
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
			if rule.Limit < 1 {
				return fieldErr(p+".limit", "must be ≥ 1 (got %d)", rule.Limit)
			}
			if rule.Window != 0 && rule.WindowMs != 0 {
				return fieldErr(p+".window_ms", "set window or window_ms, not both")
			}
			if rule.WindowMs < 0 {
				return fieldErr(p+".window_ms", "must be > 0 (got %d)", rule.WindowMs)
			}
			if rule.window() <= 0 {
				return fieldErr(p+".window", "must be > 0 (got %s)", rule.Window)
			}
		case ratelimit.TokenBucket:
			if !(rule.ReplenishRate > 0) || math.IsInf(rule.ReplenishRate, 0) {
				return fieldErr(p+".replenish_rate", "must be > 0 (got %g)", rule.ReplenishRate)
			}
			if rule.Burst < 1 {
				return fieldErr(p+".burst", "must be ≥ 1 (got %d)", rule.Burst)
			}
		default:
			return fieldErr(p+".algorithm", "must be sliding_window or token_bucket (got %q)", rule.Algorithm)
		}
	}
	return nil
}

func (g *GuardConfig) validate() error {
	if g.Interval <= 0 {
		return fieldErr("guard.interval", "must be > 0 (got %s)", g.Interval)
	}
	if g.ProbeTick <= 0 {
		return fieldErr("guard.probe_tick", "must be > 0 (got %s)", g.ProbeTick)
	}
	if g.Cooldown < 0 {
		return fieldErr("guard.cooldown", "must be ≥ 0 (got %s)", g.Cooldown)
	}
	for _, w := range []struct {
		name string
		w    Watermarks
	}{
		{"lag_probe_p99_ms", g.LagProbeP99Ms}, {"sched_latency_p99_ms", g.SchedLatencyP99Ms},
		{"gc_pause_p99_ms", g.GCPauseP99Ms}, {"heap_mb", g.HeapMB},
		{"inflight_ratio", g.InflightRatio}, {"queue_fill", g.QueueFill},
		{"upstream_latency_ratio", g.UpstreamLatencyRatio},
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
	if l.Max < l.Min {
		return fieldErr(path+".max", "must be ≥ min %d (got %d)", l.Min, l.Max)
	}
	if l.Limit < l.Min || l.Limit > l.Max {
		return fieldErr(path+".limit", "must be in [min, max] = [%d, %d] (got %d)", l.Min, l.Max, l.Limit)
	}
	if cc.QueueSize < 0 {
		return fieldErr(path+".queue_size", "must be ≥ 0 (got %d)", cc.QueueSize)
	}
	if cc.QueueTimeout <= 0 {
		return fieldErr(path+".queue_timeout", "must be > 0 (got %s)", cc.QueueTimeout)
	}
	if err := cc.Validate(); err != nil {
		return fieldErr(path, "%v", err)
	}
	return nil
}

func (a *AgentConfig) validate() error {
	if a.FanOut < 1 {
		return fieldErr("agent.fan_out", "must be ≥ 1 (got %d)", a.FanOut)
	}
	if a.YellowFanOut < 1 || a.YellowFanOut > a.FanOut {
		return fieldErr("agent.yellow_fan_out", "must be in [1, fan_out=%d] (got %d)", a.FanOut, a.YellowFanOut)
	}
	if a.RedFanOut < 1 || a.RedFanOut > a.FanOut {
		return fieldErr("agent.red_fan_out", "must be in [1, fan_out=%d] (got %d)", a.FanOut, a.RedFanOut)
	}
	if !(a.RedRulesShare >= 0 && a.RedRulesShare <= 1) {
		return fieldErr("agent.red_rules_share", "must be in [0, 1] (got %g)", a.RedRulesShare)
	}
	if a.ComplexTokens < 0 {
		return fieldErr("agent.complex_tokens", "must be ≥ 0 (got %d)", a.ComplexTokens)
	}
	if a.MaxSubcallsInflight < 1 {
		return fieldErr("agent.max_subcalls_inflight", "must be ≥ 1 (got %d)", a.MaxSubcallsInflight)
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
	if s.BufferBytes < 512 {
		return fieldErr("stream.buffer_bytes", "must be ≥ 512 (got %d)", s.BufferBytes)
	}
	if s.WriteTimeout <= 0 {
		return fieldErr("stream.write_timeout", "must be > 0 (got %s)", s.WriteTimeout)
	}
	if s.ExportRows < 1 {
		return fieldErr("stream.export_rows", "must be ≥ 1 (got %d)", s.ExportRows)
	}
	if s.ExportMaxRows < s.ExportRows {
		return fieldErr("stream.export_max_rows", "must be ≥ export_rows %d (got %d)", s.ExportRows, s.ExportMaxRows)
	}
	if s.ExportRowBytes < 16 {
		return fieldErr("stream.export_row_bytes", "must be ≥ 16 (got %d)", s.ExportRowBytes)
	}
	return nil
}

// NormalizeNode turns "host:port" or "http://host:port" into a base URL
// "http://host:port" without a trailing slash.
func NormalizeNode(n string) (string, error) {
	s := strings.TrimSpace(n)
	if s == "" {
		return "", errors.New("empty node address")
	}
	if strings.HasPrefix(s, "https://") {
		return strings.TrimRight(s, "/"), nil
	}
	s = strings.TrimPrefix(s, "http://")
	s = strings.TrimRight(s, "/")
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 || strings.ContainsAny(s, "/ ") {
		return "", fmt.Errorf("node %q must be host:port or http://host:port", n)
	}
	if p, err := strconv.Atoi(s[i+1:]); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("node %q has an invalid port", n)
	}
	return "http://" + s, nil
}
