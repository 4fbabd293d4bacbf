package gateway

import (
	"slices"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/gateway/upstream"
	"github.com/levee-lab/levee/internal/wire"
)

// Config is the gateway's YAML configuration. Start from DefaultConfig and
// override; ParseConfig does exactly that, so a file need only name what it
// changes. Durations are YAML strings in time.ParseDuration form ("500ms").
// Validate reports the first invalid field; ParseConfig adds its line.
//
// The parts keep their own config types and Config embeds them: each
// class is an admit.BulkheadConfig (its limiter inline), the pool an
// upstream.Config, each rate-limit rule a ratelimit.Rule. What stays the
// gateway's own is what only the gateway knows: keys and tenants, routes,
// the guard's watermarks per signal, the store's spelling (a duration
// timeout, a plain fail_open), the agent fan-out and streaming.
//
// This file holds the types and defaults; config_yaml.go the decoding with
// line numbers; config_validate.go the validation.
type Config struct {
	// Listen is the traffic address ("127.0.0.1:0" picks a free port).
	Listen string `yaml:"listen" json:"listen"`
	// Admin is the admin API address. It must be a loopback address
	// unless AdminAllowRemote is set.
	Admin string `yaml:"admin" json:"admin"`
	// AdminAllowRemote lets Admin be a non-loopback address (the bearer
	// token is then all that guards the admin API; the gateway warns).
	AdminAllowRemote bool `yaml:"admin_allow_remote" json:"admin_allow_remote"`
	// AdminToken is the bearer token of the admin API, at least
	// wire.MinAdminTokenLen characters. Empty: the command takes
	// LEVEE_ADMIN_TOKEN or generates one.
	AdminToken string `yaml:"admin_token" json:"-"`

	// MaxTokensLimit bounds the max_tokens (and max_completion_tokens) a
	// model request may ask for: chat, completions, an agent's sub-calls;
	// more is 400 naming the field. Default openai.MaxTokens (32768), the
	// fake model's own bound; raise it for long-context backends.
	// 1..maxMaxTokensLimit.
	MaxTokensLimit int `yaml:"max_tokens_limit" json:"max_tokens_limit"`

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
	// DrainDelay is how long a drain keeps the listeners accepting and
	// serving while /readyz answers 503, so load balancers polling it
	// take the gateway out of rotation before it refuses connections.
	// Part of DrainTimeout: in [0, DrainTimeout). 0: stop accepting at
	// once (then no client sees the 503).
	DrainDelay time.Duration `yaml:"drain_delay" json:"drain_delay"`

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
	// Budget shapes the token budget by priority: the per-request cap and
	// the headroom held for P0 and P1 (admit.BudgetConfig; its tokens are
	// TokenBudget).
	Budget admit.BudgetConfig `yaml:"budget" json:"budget"`
	// Agent shapes POST /v1/agent's fan-out.
	Agent AgentConfig `yaml:"agent" json:"agent"`
	// Upstream is the pool of model nodes.
	Upstream upstream.Config `yaml:"upstream" json:"upstream"`
	// Stream shapes SSE relay and NDJSON export.
	Stream StreamConfig `yaml:"stream" json:"stream"`
	// Defenses are the initial defense toggles (admin API changes them).
	Defenses wire.Defenses `yaml:"defenses" json:"defenses"`
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

// RoutesConfig holds one RouteConfig per route (keys: the wire route names).
type RoutesConfig struct {
	Chat     RouteConfig `yaml:"chat" json:"chat"`
	Predict  RouteConfig `yaml:"predict" json:"predict"`
	Agent    RouteConfig `yaml:"agent" json:"agent"`
	Export   RouteConfig `yaml:"export" json:"export"`
	Standard RouteConfig `yaml:"standard" json:"standard"`
	// Completions is POST /v1/completions, Embeddings POST /v1/embeddings.
	Completions RouteConfig           `yaml:"completions" json:"completions"`
	Embeddings  EmbeddingsRouteConfig `yaml:"embeddings" json:"embeddings"`
}

// RouteConfig is one route's settings.
type RouteConfig struct {
	// Timeout is the deadline when the client sends no X-Levee-Deadline-Ms;
	// it also caps a client deadline. > 0.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
}

// EmbeddingsRouteConfig is POST /v1/embeddings' settings: a route's, and
// the cap on its answer.
type EmbeddingsRouteConfig struct {
	RouteConfig `yaml:",inline"`
	// AnswerLimitBytes bounds the embeddings answer the gateway reads
	// from a model (it reads the answer whole, to settle the usage it
	// reports, before relaying it); a larger answer is an upstream error
	// (502) naming this setting: split the batch, or raise the limit.
	// Vectors are large: 2,048 inputs of 1,536 dimensions are about 17 MB
	// in base64 (the OpenAI clients' default encoding) and about 60 MB as
	// JSON floats. The gateway holds up to this much per request (an
	// answer of unknown length, chunked, briefly twice: read in pooled
	// pieces, then copied once into a buffer of its length).
	// 1..1073741824 (1 GiB); default 33554432 (32 MiB).
	AnswerLimitBytes int64 `yaml:"answer_limit_bytes" json:"answer_limit_bytes"`
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

// RuleConfig is one rate-limit rule: a ratelimit.Rule (algorithm, limit,
// window, replenish_rate, burst) and where it applies.
type RuleConfig struct {
	// Tenant is a tenant name or "*" (every tenant, each its own bucket).
	Tenant string `yaml:"tenant" json:"tenant"`
	// Route is a route name (chat, predict, agent, export, standard,
	// completions, embeddings) or "*".
	Route string `yaml:"route" json:"route"`
	// Rule is the limit: "sliding_window" (at most Limit cost units per
	// Window) or "token_bucket" (ReplenishRate units per second, Burst
	// capacity).
	ratelimit.Rule `yaml:",inline"`
	// WindowMs is Window in milliseconds, the admin API's spelling, so a
	// PUT /admin/limits rule also reads as config. Set one of the two.
	WindowMs int64 `yaml:"window_ms" json:"window_ms,omitempty"`
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

// Rate-limit cost units.
const (
	CostRequests = "requests"
	CostTokens   = "tokens"
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
	// BackpressureShare is the share (0..1) of model nodes whose last
	// answer within BackpressureTTL carried wire.HeaderBackpressure: the
	// nodes' own signal that their heap, CPU or queue is past a watermark.
	BackpressureShare Watermarks `yaml:"backpressure_share" json:"backpressure_share"`
	// BackpressureTTL is how long a node's signal counts after its last
	// answer said so (a later answer without it ends it at once). > 0.
	BackpressureTTL time.Duration `yaml:"backpressure_ttl" json:"backpressure_ttl"`
}

// Watermarks are a signal's thresholds, non-decreasing where non-zero.
type Watermarks struct {
	Yellow float64 `yaml:"yellow" json:"yellow"`
	Red    float64 `yaml:"red" json:"red"`
	Black  float64 `yaml:"black" json:"black"`
}

// ClassesConfig holds the bulkhead of each route class (keys: the wire
// class names). A class is one admit.BulkheadConfig, its limiter's knobs
// inline: algorithm, limit, min, max (and the adaptive limiters' tuning),
// queue_size, queue_timeout. The gateway asks more of them than admit
// does: min ≥ 1, min ≤ limit ≤ max, queue_timeout > 0.
type ClassesConfig struct {
	AI       admit.BulkheadConfig `yaml:"ai" json:"ai"`
	Agent    admit.BulkheadConfig `yaml:"agent" json:"agent"`
	Stream   admit.BulkheadConfig `yaml:"stream" json:"stream"`
	Standard admit.BulkheadConfig `yaml:"standard" json:"standard"`
}

// AgentConfig shapes POST /v1/agent (seed 004): a task runs up to
// MaxDepth tool-call steps one after the other, each a fan-out of FanOut
// parallel model sub-calls (the first YellowFanOut of them core, the rest
// non-core retrieval). The overload level degrades it as the seed's table
// says: green — every step the task asks for, full fan-out; yellow —
// at most YellowDepth steps, core sub-calls only; red — RedFanOut
// sub-calls per step and RedDropShare of complex tasks dropped (503);
// black — when the guard is black or BlackNodesDown of the model nodes
// are down, the rules answer with no model call.
type AgentConfig struct {
	// FanOut is K, the parallel sub-calls of one step at green. 1..64.
	FanOut int `yaml:"fan_out" json:"fan_out"`
	// YellowFanOut is the core sub-calls of a step: the fan-out from
	// yellow on (non-core retrieval off; seed 004: 2). 1..FanOut.
	YellowFanOut int `yaml:"yellow_fan_out" json:"yellow_fan_out"`
	// RedFanOut is the fan-out at red. 1..YellowFanOut.
	RedFanOut int `yaml:"red_fan_out" json:"red_fan_out"`
	// MaxDepth is the most tool-call steps a task may run (at green;
	// seed 004: 5). A request asks for 1..MaxDepth steps. 1..16.
	MaxDepth int `yaml:"max_depth" json:"max_depth"`
	// YellowDepth caps the steps from yellow on (seed 004: 2). 1..MaxDepth.
	YellowDepth int `yaml:"yellow_depth" json:"yellow_depth"`
	// RedDropShare is the share (0..1) of complex tasks refused at red
	// (seed 004: 0.2).
	RedDropShare float64 `yaml:"red_drop_share" json:"red_drop_share"`
	// ComplexTokens: a task whose full plan is estimated at ≥ this many
	// tokens is complex. ≥ 0.
	ComplexTokens int64 `yaml:"complex_tokens" json:"complex_tokens"`
	// BlackNodesDown is the share (0..1] of model nodes down (health check
	// failed or breaker open) at which agents answer by rules (seed 004:
	// 0.3). 0 turns it off.
	BlackNodesDown float64 `yaml:"black_nodes_down" json:"black_nodes_down"`
	// MaxSubcallsInflight is the amplification cap: sub-calls in flight
	// across the gateway (budget defense). 1..100000.
	MaxSubcallsInflight int `yaml:"max_subcalls_inflight" json:"max_subcalls_inflight"`
	// QueueSize bounds the sub-calls that may wait for a place under the
	// cap. A task takes its places at the entry; when the cap and the
	// queue are full it is refused there, never buffered. A sub-call
	// waits for its place, first come first served, until its task's
	// deadline (routes.agent.timeout, or the client's
	// X-Levee-Deadline-Ms): there is no per-sub-call timeout — the
	// bulkhead's classes.agent.queue_timeout bounds the task's wait for
	// admission, not its sub-calls' — and one still waiting then ends as
	// a timeout sub-call. 0..1000000.
	QueueSize int `yaml:"queue_size" json:"queue_size"`
	// MaxPromptChars bounds an agent prompt (characters). 1..body_limit_bytes.
	MaxPromptChars int `yaml:"max_prompt_chars" json:"max_prompt_chars"`
}

// StreamConfig shapes the streaming routes.
type StreamConfig struct {
	// BufferBytes bounds the buffered bytes per streaming response. ≥ 512.
	BufferBytes int `yaml:"buffer_bytes" json:"buffer_bytes"`
	// WriteTimeout bounds one write+flush to a client: of a stream, and of
	// a non-streamed answer relayed from a model (written in pieces of
	// BufferBytes); a client that takes nothing for this long is cut. > 0.
	// A non-streamed answer's bulkhead place and budget tokens are given
	// back before its write: a slow reader holds no model capacity.
	WriteTimeout time.Duration `yaml:"write_timeout" json:"write_timeout"`
	// ExportRows is the default row count of GET /v1/export (?rows= overrides
	// up to ExportMaxRows). ≥ 1.
	ExportRows    int `yaml:"export_rows" json:"export_rows"`
	ExportMaxRows int `yaml:"export_max_rows" json:"export_max_rows"`
	// ExportRowBytes is the approximate size of one NDJSON row. ≥ 16.
	ExportRowBytes int `yaml:"export_row_bytes" json:"export_row_bytes"`
	// RequestUsage asks the model for a final usage chunk
	// (stream_options.include_usage) on streams whose client did not ask,
	// so the token budget settles with exact counts; that chunk is not
	// relayed to such clients. Off, or when asking would take the body
	// past body_limit_bytes: tokens are counted on the stream.
	RequestUsage bool `yaml:"request_usage" json:"request_usage"`
}

// DefaultConfig returns the defaults every field falls back to. Upstream
// nodes have no default: a config must name at least one.
func DefaultConfig() Config {
	return Config{
		Listen:            "127.0.0.1:8080",
		Admin:             "127.0.0.1:0",
		MaxTokensLimit:    MaxMaxTokens,
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
			// A completion is as long as a chat answer; an embedding is one
			// forward pass over its inputs (no decoding), but a batch of
			// 2,048 inputs queued behind chat calls takes a while.
			Completions: RouteConfig{Timeout: 30 * time.Second},
			Embeddings:  EmbeddingsRouteConfig{RouteConfig: RouteConfig{Timeout: 30 * time.Second}, AnswerLimitBytes: 32 << 20},
		},
		RateLimit: RateLimitConfig{
			Store: StoreConfig{Kind: wire.StoreLocal, Timeout: 5 * time.Millisecond, FailOpen: true, Share: 1},
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
			BackpressureShare:    Watermarks{Yellow: 0.25, Red: 0.5, Black: 0},
			BackpressureTTL:      2 * time.Second,
		},
		Classes: ClassesConfig{
			AI:       staticClass(48, 4, 256, 64, 500*time.Millisecond),
			Agent:    staticClass(16, 2, 128, 16, 500*time.Millisecond),
			Stream:   staticClass(64, 4, 512, 16, 250*time.Millisecond),
			Standard: staticClass(64, 4, 512, 64, 100*time.Millisecond),
		},
		TokenBudget: 200000,
		Budget:      admit.BudgetConfig{ReserveP0: 0.25, ReserveP1: 0.10},
		Agent: AgentConfig{
			FanOut: 4, YellowFanOut: 2, RedFanOut: 1, MaxDepth: 5, YellowDepth: 2, RedDropShare: 0.2,
			ComplexTokens: 1000, BlackNodesDown: 0.3, MaxSubcallsInflight: 64, QueueSize: 64, MaxPromptChars: 256 << 10,
		},
		Upstream: upstream.Config{
			HealthInterval:     time.Second,
			HealthPath:         wire.PathHealthz,
			HealthTimeout:      upstream.DefaultHealthTimeout,
			UnhealthyThreshold: upstream.DefaultUnhealthyThreshold,
			Breaker: upstream.BreakerConfig{
				FailureRatio: 0.5, MinRequests: 20, Window: 10 * time.Second,
				OpenFor: 5 * time.Second, HalfOpenProbes: 3,
			},
			RetryBudget: upstream.RetryBudgetConfig{
				Ratio: 0.1, MinPerSecond: 1, TTL: upstream.DefaultRetryTTL, P0Reserve: upstream.DefaultP0Reserve,
			},
			MinServiceTime:      20 * time.Millisecond,
			MaxIdleConnsPerHost: 1024,
			DialTimeout:         time.Second,
			IdleConnTimeout:     upstream.DefaultIdleConnTimeout,
			RetryOn:             slices.Clone(upstream.DefaultRetryOn),
			LatencyWindow:       upstream.DefaultLatencyWindow,
			AttemptTimeout:      upstream.AttemptTimeoutConfig{}.WithDefaults(),
			Hedge:               upstream.HedgeConfig{}.WithDefaults(),
			Outlier:             upstream.OutlierConfig{}.WithDefaults(),
		},
		Stream: StreamConfig{
			BufferBytes: 32 << 10, WriteTimeout: 5 * time.Second,
			ExportRows: 10000, ExportMaxRows: 10_000_000, ExportRowBytes: 200, RequestUsage: true,
		},
		Defenses: wire.AllDefenses(true),
	}
}

// byID returns the classes in classID order.
func (c ClassesConfig) byID() [numClasses]admit.BulkheadConfig {
	return [numClasses]admit.BulkheadConfig{c.AI, c.Agent, c.Stream, c.Standard}
}

// staticClass is a bulkhead with a static limit (min and max bound what the
// admin API may set) and a bounded queue.
func staticClass(limit, lo, hi, queue int, timeout time.Duration) admit.BulkheadConfig {
	return admit.BulkheadConfig{
		Limiter:      admit.LimiterConfig{Algorithm: admit.AlgoStatic, Limit: limit, Min: lo, Max: hi},
		QueueSize:    queue,
		QueueTimeout: timeout,
	}
}
