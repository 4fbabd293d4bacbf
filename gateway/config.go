package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the gateway's YAML configuration. Start from DefaultConfig and
// override; ParseConfig does exactly that, so a file need only name what it
// changes. Durations are YAML strings in time.ParseDuration form ("500ms").
// Validate reports the first invalid field; ParseConfig adds its line.
type Config struct {
	// Listen is the traffic address ("127.0.0.1:0" picks a free port).
	Listen string `yaml:"listen" json:"listen"`
	// Admin is the admin API address; loopback unless told otherwise.
	Admin string `yaml:"admin" json:"admin"`
	// AdminToken is the bearer token of the admin API. Empty: the command
	// takes LEVEE_ADMIN_TOKEN or generates one.
	AdminToken string `yaml:"admin_token" json:"-"`

	// BodyLimitBytes caps request bodies (413 above it). ≥ 1.
	BodyLimitBytes int64 `yaml:"body_limit_bytes" json:"body_limit_bytes"`
	// ReadHeaderTimeout bounds reading request headers (slowloris). > 0.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout" json:"read_header_timeout"`
	// MaxHeaderBytes caps request header size. ≥ 1024.
	MaxHeaderBytes int `yaml:"max_header_bytes" json:"max_header_bytes"`
	// IdleTimeout closes idle keep-alive connections. > 0.
	IdleTimeout time.Duration `yaml:"idle_timeout" json:"idle_timeout"`
	// DrainTimeout bounds graceful shutdown after SIGTERM. > 0.
	DrainTimeout time.Duration `yaml:"drain_timeout" json:"drain_timeout"`

	// Keys maps API keys (Authorization: Bearer KEY) to tenant and priority.
	Keys []KeyConfig `yaml:"keys" json:"-"`
	// UnknownKey is the policy for a missing or unknown key: "anonymous"
	// (tenant AnonymousTenant, priority P2) or "reject" (401).
	UnknownKey string `yaml:"unknown_key" json:"unknown_key"`
	// AnonymousTenant is the tenant of requests without a known key.
	AnonymousTenant string `yaml:"anonymous_tenant" json:"anonymous_tenant"`

	// Routes holds per-route settings (default deadline).
	Routes RoutesConfig `yaml:"routes" json:"routes"`
	// RateLimit is the store and the per-tenant/route rules.
	RateLimit RateLimitConfig `yaml:"ratelimit" json:"ratelimit"`
	// Guard holds the overload guard's watermarks.
	Guard GuardConfig `yaml:"guard" json:"guard"`
	// Classes holds the bulkhead of each route class.
	Classes ClassesConfig `yaml:"classes" json:"classes"`
	// TokenBudget caps estimated LLM tokens in flight (cost budget). ≥ 1.
	TokenBudget int64 `yaml:"token_budget" json:"token_budget"`
	// Agent shapes POST /v1/agent's fan-out.
	Agent AgentConfig `yaml:"agent" json:"agent"`
	// Upstream is the pool of model nodes.
	Upstream UpstreamConfig `yaml:"upstream" json:"upstream"`
	// Stream shapes SSE relay and NDJSON export.
	Stream StreamConfig `yaml:"stream" json:"stream"`
	// Defenses are the initial defense toggles (admin API changes them).
	Defenses Defenses `yaml:"defenses" json:"defenses"`
}

// KeyConfig is one API key of the key table.
type KeyConfig struct {
	Key      string `yaml:"key" json:"key"`
	Tenant   string `yaml:"tenant" json:"tenant"`
	Priority string `yaml:"priority" json:"priority"` // P0, P1 or P2
}

// Unknown-key policies.
const (
	UnknownKeyAnonymous = "anonymous"
	UnknownKeyReject    = "reject"
)

// Route names: the `route` label of metrics and the keys of RoutesConfig.
const (
	RouteChat     = "chat"
	RoutePredict  = "predict"
	RouteAgent    = "agent"
	RouteExport   = "export"
	RouteStandard = "standard"
)

// Route class names: the `class` label of metrics and keys of ClassesConfig.
const (
	ClassAI       = "ai"
	ClassAgent    = "agent"
	ClassStream   = "stream"
	ClassStandard = "standard"
)

// RoutesConfig holds one RouteConfig per route.
type RoutesConfig struct {
	Chat     RouteConfig `yaml:"chat" json:"chat"`
	Predict  RouteConfig `yaml:"predict" json:"predict"`
	Agent    RouteConfig `yaml:"agent" json:"agent"`
	Export   RouteConfig `yaml:"export" json:"export"`
	Standard RouteConfig `yaml:"standard" json:"standard"`
}

// RouteConfig is one route's settings.
type RouteConfig struct {
	// Timeout is the deadline when the client sends no X-Levee-Deadline-Ms;
	// it also caps a client deadline. > 0.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
}

// RateLimitConfig is the rate limiter's store and rules.
type RateLimitConfig struct {
	Store StoreConfig `yaml:"store" json:"store"`
	// Rules are matched most specific first: tenant+route, tenant+"*",
	// "*"+route, "*"+"*". A request matching no rule is not limited.
	Rules []RuleConfig `yaml:"rules" json:"rules"`
}

// StoreConfig selects the rate-limit store.
type StoreConfig struct {
	// Kind is "local" (in-process) or "redis".
	Kind string `yaml:"kind" json:"kind"`
	// URL is the redis URL (redis://host:port/db) when Kind is "redis".
	URL string `yaml:"url" json:"url,omitempty"`
	// Timeout bounds one store call; past it the local fallback decides.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// FailOpen: when the store fails, decide locally (true) or deny (false).
	FailOpen bool `yaml:"fail_open" json:"fail_open"`
	// Share is this gateway's share (0..1] of a global limit when the store
	// is local but several gateways split one limit; 1 otherwise.
	Share float64 `yaml:"share" json:"share"`
}

// RuleConfig is one rate-limit rule.
type RuleConfig struct {
	// Tenant is a tenant name or "*" (every tenant, each its own bucket).
	Tenant string `yaml:"tenant" json:"tenant"`
	// Route is a route name (chat, predict, agent, export, standard) or "*".
	Route string `yaml:"route" json:"route"`
	// Algorithm is "sliding_window" or "token_bucket".
	Algorithm string `yaml:"algorithm" json:"algorithm"`
	// Limit and Window: at most Limit cost units per Window (sliding_window).
	Limit  int64         `yaml:"limit" json:"limit,omitempty"`
	Window time.Duration `yaml:"window" json:"window,omitempty"`
	// WindowMs is Window in milliseconds, the admin API's spelling, so a
	// PUT /admin/limits rule also reads as config. Set one of the two.
	WindowMs int64 `yaml:"window_ms" json:"window_ms,omitempty"`
	// ReplenishRate units per second and Burst capacity (token_bucket).
	ReplenishRate float64 `yaml:"replenish_rate" json:"replenish_rate,omitempty"`
	Burst         int64   `yaml:"burst" json:"burst,omitempty"`
	// Cost is what one request costs: "requests" (1, the default when
	// empty) or "tokens" (its estimated LLM tokens, seed 004).
	Cost string `yaml:"cost" json:"cost"`
}

// window is Window, or WindowMs when Window is not set.
func (r RuleConfig) window() time.Duration {
	if r.Window == 0 {
		return time.Duration(r.WindowMs) * time.Millisecond
	}
	return r.Window
}

// Rate-limit algorithms and cost units.
const (
	AlgoSlidingWindow = "sliding_window"
	AlgoTokenBucket   = "token_bucket"
	CostRequests      = "requests"
	CostTokens        = "tokens"
)

// GuardConfig holds the overload guard's watermarks. Every signal has a
// yellow, red and black watermark; the level is the highest any signal
// reaches. A zero watermark disables that step of that signal.
type GuardConfig struct {
	// Interval is how often the level is recomputed. > 0.
	Interval time.Duration `yaml:"interval" json:"interval"`
	// ProbeTick is the lag probe's tick (oversleep = lag). > 0.
	ProbeTick time.Duration `yaml:"probe_tick" json:"probe_tick"`
	// Cooldown is how long a level holds before stepping down one. ≥ 0.
	Cooldown time.Duration `yaml:"cooldown" json:"cooldown"`

	LagProbeP99Ms     Watermarks `yaml:"lag_probe_p99_ms" json:"lag_probe_p99_ms"`
	SchedLatencyP99Ms Watermarks `yaml:"sched_latency_p99_ms" json:"sched_latency_p99_ms"`
	GCPauseP99Ms      Watermarks `yaml:"gc_pause_p99_ms" json:"gc_pause_p99_ms"`
	HeapMB            Watermarks `yaml:"heap_mb" json:"heap_mb"`
	// InflightRatio is ai/agent upstream in-flight over the ai class's
	// configured limit (exceeds 1 only when the bulkhead is off).
	InflightRatio Watermarks `yaml:"inflight_ratio" json:"inflight_ratio"`
	// QueueFill is the fullest bulkhead queue's depth over its size (0..1).
	QueueFill Watermarks `yaml:"queue_fill" json:"queue_fill"`
	// UpstreamLatencyRatio is recent upstream latency over its baseline.
	UpstreamLatencyRatio Watermarks `yaml:"upstream_latency_ratio" json:"upstream_latency_ratio"`
}

// Watermarks are a signal's thresholds, non-decreasing where non-zero.
type Watermarks struct {
	Yellow float64 `yaml:"yellow" json:"yellow"`
	Red    float64 `yaml:"red" json:"red"`
	Black  float64 `yaml:"black" json:"black"`
}

// ClassesConfig holds the bulkhead of each route class.
type ClassesConfig struct {
	AI       ClassConfig `yaml:"ai" json:"ai"`
	Agent    ClassConfig `yaml:"agent" json:"agent"`
	Stream   ClassConfig `yaml:"stream" json:"stream"`
	Standard ClassConfig `yaml:"standard" json:"standard"`
}

// ClassConfig is one bulkhead: a concurrency limit and a priority queue.
type ClassConfig struct {
	// Algorithm is "static", "aimd" or "gradient".
	Algorithm string `yaml:"algorithm" json:"algorithm"`
	// Limit is the (initial) concurrency limit; Min ≤ Limit ≤ Max.
	Limit int `yaml:"limit" json:"limit"`
	Min   int `yaml:"min" json:"min"`
	Max   int `yaml:"max" json:"max"`
	// QueueSize bounds the wait queue (0: fail fast when at the limit).
	QueueSize int `yaml:"queue_size" json:"queue_size"`
	// QueueTimeout bounds one wait in the queue. > 0.
	QueueTimeout time.Duration `yaml:"queue_timeout" json:"queue_timeout"`
}

// Limiter algorithms.
const (
	LimiterStatic   = "static"
	LimiterAIMD     = "aimd"
	LimiterGradient = "gradient"
)

// AgentConfig shapes POST /v1/agent (seed 004).
type AgentConfig struct {
	// FanOut is K, the parallel sub-calls of one request at green. ≥ 1.
	FanOut int `yaml:"fan_out" json:"fan_out"`
	// YellowFanOut is the depth at yellow (seed 004: 2). 1..FanOut.
	YellowFanOut int `yaml:"yellow_fan_out" json:"yellow_fan_out"`
	// RedFanOut is the depth at red for requests not answered by rules. 1..FanOut.
	RedFanOut int `yaml:"red_fan_out" json:"red_fan_out"`
	// RedRulesShare is the share (0..1) of complex requests answered by
	// rules only (fallback, no model) at red (seed 004: 0.2).
	RedRulesShare float64 `yaml:"red_rules_share" json:"red_rules_share"`
	// ComplexTokens: a request estimated at ≥ this many tokens is complex.
	ComplexTokens int64 `yaml:"complex_tokens" json:"complex_tokens"`
	// MaxSubcallsInflight is the amplification cap: sub-calls in flight
	// across the gateway. A sub-call over the cap is not sent. ≥ 1.
	MaxSubcallsInflight int `yaml:"max_subcalls_inflight" json:"max_subcalls_inflight"`
}

// UpstreamConfig is the pool of model nodes.
type UpstreamConfig struct {
	// Nodes are model node addresses (host:port or http://host:port). ≥ 1.
	Nodes []string `yaml:"nodes" json:"nodes"`
	// HealthInterval between active health checks (GET HealthPath, 200 =
	// up; a refused connection marks a node down at once, other failures
	// after three in a row, each check bounded by the pool's 2 s timeout).
	// > 0.
	HealthInterval time.Duration `yaml:"health_interval" json:"health_interval"`
	HealthPath     string        `yaml:"health_path" json:"health_path"`
	// Breaker is the per-node circuit breaker.
	Breaker BreakerConfig `yaml:"breaker" json:"breaker"`
	// RetryBudget bounds retries (connection failures only).
	RetryBudget RetryBudgetConfig `yaml:"retry_budget" json:"retry_budget"`
	// MinServiceTime: no upstream call when less time than this remains.
	MinServiceTime time.Duration `yaml:"min_service_time" json:"min_service_time"`
	// MaxIdleConnsPerHost tunes the transport. ≥ 1.
	MaxIdleConnsPerHost int `yaml:"max_idle_conns_per_host" json:"max_idle_conns_per_host"`
	// DialTimeout bounds connecting to a node. > 0.
	DialTimeout time.Duration `yaml:"dial_timeout" json:"dial_timeout"`
}

// BreakerConfig is a per-node circuit breaker.
type BreakerConfig struct {
	// FailureRatio (0..1] of failed calls in Window opens the breaker once
	// at least MinRequests were made.
	FailureRatio float64       `yaml:"failure_ratio" json:"failure_ratio"`
	MinRequests  int           `yaml:"min_requests" json:"min_requests"`
	Window       time.Duration `yaml:"window" json:"window"`
	// OpenFor is how long it stays open before half-open probes.
	OpenFor time.Duration `yaml:"open_for" json:"open_for"`
	// HalfOpenProbes calls must succeed to close it again. ≥ 1.
	HalfOpenProbes int `yaml:"half_open_probes" json:"half_open_probes"`
}

// RetryBudgetConfig: retries ≤ Ratio × requests + MinPerSecond.
type RetryBudgetConfig struct {
	Ratio        float64 `yaml:"ratio" json:"ratio"`                   // 0..1, default 0.1
	MinPerSecond float64 `yaml:"min_per_second" json:"min_per_second"` // ≥ 0
}

// StreamConfig shapes the streaming routes.
type StreamConfig struct {
	// BufferBytes bounds the buffered bytes per streaming response. ≥ 512.
	BufferBytes int `yaml:"buffer_bytes" json:"buffer_bytes"`
	// WriteTimeout bounds one write+flush to a client. > 0.
	WriteTimeout time.Duration `yaml:"write_timeout" json:"write_timeout"`
	// ExportRows is the default row count of GET /v1/export (?rows= overrides
	// up to ExportMaxRows). ≥ 1.
	ExportRows    int `yaml:"export_rows" json:"export_rows"`
	ExportMaxRows int `yaml:"export_max_rows" json:"export_max_rows"`
	// ExportRowBytes is the approximate size of one NDJSON row. ≥ 16.
	ExportRowBytes int `yaml:"export_row_bytes" json:"export_row_bytes"`
}

// Defenses are the run-time switches of the chain. All off makes the
// gateway a plain pass-through: no limit, no queue, no shedding.
type Defenses struct {
	RateLimit bool `yaml:"ratelimit" json:"ratelimit"`
	Guard     bool `yaml:"guard" json:"guard"`
	Bulkhead  bool `yaml:"bulkhead" json:"bulkhead"`
	Budget    bool `yaml:"budget" json:"budget"`
	Breaker   bool `yaml:"breaker" json:"breaker"`
	Retry     bool `yaml:"retry" json:"retry"`
	Fallback  bool `yaml:"fallback" json:"fallback"`
}

// DefenseNames lists the defenses in display order.
var DefenseNames = []string{"ratelimit", "guard", "bulkhead", "budget", "breaker", "retry", "fallback"}

// Get reports one defense by name; ok is false for an unknown name.
func (d Defenses) Get(name string) (on, ok bool) {
	switch name {
	case "ratelimit":
		return d.RateLimit, true
	case "guard":
		return d.Guard, true
	case "bulkhead":
		return d.Bulkhead, true
	case "budget":
		return d.Budget, true
	case "breaker":
		return d.Breaker, true
	case "retry":
		return d.Retry, true
	case "fallback":
		return d.Fallback, true
	}
	return false, false
}

// Set switches one defense by name; it reports false for an unknown name.
func (d *Defenses) Set(name string, on bool) bool {
	switch name {
	case "ratelimit":
		d.RateLimit = on
	case "guard":
		d.Guard = on
	case "bulkhead":
		d.Bulkhead = on
	case "budget":
		d.Budget = on
	case "breaker":
		d.Breaker = on
	case "retry":
		d.Retry = on
	case "fallback":
		d.Fallback = on
	default:
		return false
	}
	return true
}

// Map returns the defenses keyed by name.
func (d Defenses) Map() map[string]bool {
	m := make(map[string]bool, len(DefenseNames))
	for _, n := range DefenseNames {
		m[n], _ = d.Get(n)
	}
	return m
}

// AllDefenses returns every defense on (on=true) or off.
func AllDefenses(on bool) Defenses {
	return Defenses{on, on, on, on, on, on, on}
}

// DefaultConfig returns the defaults every field falls back to. Upstream
// nodes have no default: a config must name at least one.
func DefaultConfig() Config {
	return Config{
		Listen:            "127.0.0.1:8080",
		Admin:             "127.0.0.1:0",
		BodyLimitBytes:    1 << 20,
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    64 << 10,
		IdleTimeout:       90 * time.Second,
		DrainTimeout:      10 * time.Second,
		UnknownKey:        UnknownKeyAnonymous,
		AnonymousTenant:   "anonymous",
		Routes: RoutesConfig{
			Chat:     RouteConfig{Timeout: 30 * time.Second},
			Predict:  RouteConfig{Timeout: 5 * time.Second},
			Agent:    RouteConfig{Timeout: 30 * time.Second},
			Export:   RouteConfig{Timeout: 5 * time.Minute},
			Standard: RouteConfig{Timeout: 2 * time.Second},
		},
		RateLimit: RateLimitConfig{
			Store: StoreConfig{Kind: "local", Timeout: 5 * time.Millisecond, FailOpen: true, Share: 1},
		},
		Guard: GuardConfig{
			Interval:             100 * time.Millisecond,
			ProbeTick:            5 * time.Millisecond,
			Cooldown:             2 * time.Second,
			LagProbeP99Ms:        Watermarks{Yellow: 50, Red: 100, Black: 500},
			SchedLatencyP99Ms:    Watermarks{Yellow: 25, Red: 60, Black: 300},
			GCPauseP99Ms:         Watermarks{Yellow: 20, Red: 50, Black: 250},
			HeapMB:               Watermarks{Yellow: 512, Red: 1024, Black: 2048},
			InflightRatio:        Watermarks{Yellow: 1.25, Red: 2, Black: 6},
			QueueFill:            Watermarks{Yellow: 0.8, Red: 0, Black: 0},
			UpstreamLatencyRatio: Watermarks{}, // off: the adaptive limit follows upstream latency
		},
		Classes: ClassesConfig{
			AI:       ClassConfig{Algorithm: LimiterStatic, Limit: 48, Min: 4, Max: 256, QueueSize: 64, QueueTimeout: 500 * time.Millisecond},
			Agent:    ClassConfig{Algorithm: LimiterStatic, Limit: 16, Min: 2, Max: 128, QueueSize: 16, QueueTimeout: 500 * time.Millisecond},
			Stream:   ClassConfig{Algorithm: LimiterStatic, Limit: 64, Min: 4, Max: 512, QueueSize: 16, QueueTimeout: 250 * time.Millisecond},
			Standard: ClassConfig{Algorithm: LimiterStatic, Limit: 64, Min: 4, Max: 512, QueueSize: 64, QueueTimeout: 100 * time.Millisecond},
		},
		TokenBudget: 200000,
		Agent: AgentConfig{
			FanOut: 4, YellowFanOut: 2, RedFanOut: 1, RedRulesShare: 0.2,
			ComplexTokens: 1000, MaxSubcallsInflight: 64,
		},
		Upstream: UpstreamConfig{
			HealthInterval: time.Second,
			HealthPath:     "/healthz",
			Breaker: BreakerConfig{
				FailureRatio: 0.5, MinRequests: 20, Window: 10 * time.Second,
				OpenFor: 5 * time.Second, HalfOpenProbes: 3,
			},
			RetryBudget:         RetryBudgetConfig{Ratio: 0.1, MinPerSecond: 1},
			MinServiceTime:      20 * time.Millisecond,
			MaxIdleConnsPerHost: 1024,
			DialTimeout:         time.Second,
		},
		Stream: StreamConfig{
			BufferBytes: 32 << 10, WriteTimeout: 5 * time.Second,
			ExportRows: 10000, ExportMaxRows: 10_000_000, ExportRowBytes: 200,
		},
		Defenses: AllDefenses(true),
	}
}

// ConfigError is an invalid configuration value or YAML syntax error.
// Line is 1-based (0 when unknown); Field is the dotted path of the key
// ("classes.ai.limit", "ratelimit.rules[1].burst").
type ConfigError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadConfig reads and parses the YAML config file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("gateway config: %w", err)
	}
	cfg, err := ParseConfig(data)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = path
	}
	return cfg, err
}

// ParseConfig decodes YAML over DefaultConfig and validates the result.
// Unknown keys, type mismatches and invalid values are *ConfigError values
// carrying the offending line. An empty document yields the defaults, which
// fail validation for want of upstream nodes.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Config{}, &ConfigError{Line: extra.Line, Msg: "more than one YAML document"}
	}
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && ce.Field != "" {
			var root yaml.Node
			if yaml.Unmarshal(data, &root) == nil {
				ce.Line = lineOf(&root, ce.Field)
			}
		}
		return Config{}, err
	}
	return cfg, nil
}

// yamlError turns yaml.v3's errors ("yaml: line 3: …", TypeError lists)
// into a *ConfigError with the first line it names.
func yamlError(err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return &ConfigError{Line: line, Msg: msg}
}

// lineOf finds the line of the key at a dotted path ("a.b[2].c") in a
// document node; when the exact key is absent (a default was invalid or
// the value came from elsewhere) it returns the line of the deepest
// ancestor present, or 0.
func lineOf(doc *yaml.Node, path string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			name = part[:i]
			if v, err := strconv.Atoi(part[i+1 : len(part)-1]); err == nil {
				idx = v
			}
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				line = n.Content[i].Line
				next = n.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

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
		if _, ok := priorityIndex(k.Priority); !ok {
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
	}{{RouteChat, c.Routes.Chat}, {RoutePredict, c.Routes.Predict}, {RouteAgent, c.Routes.Agent}, {RouteExport, c.Routes.Export}, {RouteStandard, c.Routes.Standard}} {
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
		cc   ClassConfig
	}{{ClassAI, c.Classes.AI}, {ClassAgent, c.Classes.Agent}, {ClassStream, c.Classes.Stream}, {ClassStandard, c.Classes.Standard}} {
		if err := cl.cc.validate("classes." + cl.name); err != nil {
			return err
		}
	}
	if c.TokenBudget < 1 {
		return fieldErr("token_budget", "must be ≥ 1 (got %d)", c.TokenBudget)
	}
	if err := c.Agent.validate(); err != nil {
		return err
	}
	if err := c.Upstream.validate(); err != nil {
		return err
	}
	return c.Stream.validate()
}

func (r *RateLimitConfig) validate() error {
	s := r.Store
	switch s.Kind {
	case "local":
	case "redis":
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
		case "*", RouteChat, RoutePredict, RouteAgent, RouteExport, RouteStandard:
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
		case AlgoSlidingWindow:
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
		case AlgoTokenBucket:
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

func (cc ClassConfig) validate(path string) error {
	switch cc.Algorithm {
	case LimiterStatic, LimiterAIMD, LimiterGradient:
	default:
		return fieldErr(path+".algorithm", "must be static, aimd or gradient (got %q)", cc.Algorithm)
	}
	if cc.Min < 1 {
		return fieldErr(path+".min", "must be ≥ 1 (got %d)", cc.Min)
	}
	if cc.Max < cc.Min {
		return fieldErr(path+".max", "must be ≥ min %d (got %d)", cc.Min, cc.Max)
	}
	if cc.Limit < cc.Min || cc.Limit > cc.Max {
		return fieldErr(path+".limit", "must be in [min, max] = [%d, %d] (got %d)", cc.Min, cc.Max, cc.Limit)
	}
	if cc.QueueSize < 0 {
		return fieldErr(path+".queue_size", "must be ≥ 0 (got %d)", cc.QueueSize)
	}
	if cc.QueueTimeout <= 0 {
		return fieldErr(path+".queue_timeout", "must be > 0 (got %s)", cc.QueueTimeout)
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

func (u *UpstreamConfig) validate() error {
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
	if !(u.RetryBudget.Ratio >= 0 && u.RetryBudget.Ratio <= 1) {
		return fieldErr("upstream.retry_budget.ratio", "must be in [0, 1] (got %g)", u.RetryBudget.Ratio)
	}
	if !(u.RetryBudget.MinPerSecond >= 0) || math.IsInf(u.RetryBudget.MinPerSecond, 0) {
		return fieldErr("upstream.retry_budget.min_per_second", "must be ≥ 0 (got %g)", u.RetryBudget.MinPerSecond)
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
	return nil
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

// priorityIndex maps "P0".."P2" to 0..2.
func priorityIndex(s string) (int, bool) {
	switch s {
	case "P0":
		return 0, true
	case "P1":
		return 1, true
	case "P2":
		return 2, true
	}
	return 0, false
}

// sortedKeys returns m's keys sorted (for deterministic output).
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
