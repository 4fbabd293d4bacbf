package upstream

import (
	"slices"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// Defaults applied by [Config.WithDefaults] (and so by [New]) to zero fields.
const (
	DefaultHealthPath          = "/healthz"
	DefaultHealthInterval      = 500 * time.Millisecond
	DefaultHealthTimeout       = 2 * time.Second
	DefaultUnhealthyThreshold  = 3
	DefaultMaxIdleConnsPerHost = 512
	DefaultDialTimeout         = time.Second
	DefaultIdleConnTimeout     = 90 * time.Second

	DefaultFailureRatio   = 0.5
	DefaultMinRequests    = 20
	DefaultBreakerWindow  = 10 * time.Second
	DefaultOpenFor        = 5 * time.Second
	DefaultHalfOpenProbes = 3

	DefaultRetryRatio = 0.1
	DefaultRetryTTL   = 10 * time.Second
	DefaultP0Reserve  = 0.5

	DefaultLatencyWindow = 10 * time.Second

	DefaultAttemptQuantile   = 0.99
	DefaultAttemptMultiplier = 2.0
	DefaultAttemptMin        = 50 * time.Millisecond
	DefaultMinSamples        = 20

	DefaultHedgeQuantile = 0.95
	DefaultHedgeRatio    = 0.1

	DefaultOutlierInterval     = time.Second
	DefaultOutlierWindow       = 10 * time.Second
	DefaultConsecutiveFailures = 5
	DefaultOutlierMinRequests  = 20
	DefaultFailureRateExcess   = 0.1
	DefaultLatencyRatio        = 2.0
	DefaultBaseEjectionTime    = 10 * time.Second
	DefaultMaxEjectionTime     = 300 * time.Second
	DefaultMaxEjectionPercent  = 10.0
	DefaultProbeRequests       = 3
)

// Failures a call is retried on (Config.RetryOn).
const (
	RetryOnConnect = wire.AttemptFailConnect // dial refused, reset, EOF before the first byte
	RetryOnStatus  = wire.AttemptFailStatus  // the node answered a 5xx status
	RetryOnTimeout = wire.AttemptFailTimeout // the per-attempt timeout abandoned the attempt
	// RetryOnRefused: the node answered 429, it is full. Another node may
	// have room (several gateways, each balancing by its own view, fill
	// the nodes unevenly): LiteLLM routes a 429 to another deployment,
	// Envoy retries it with retriable-status-codes. A 429 is not a failure
	// of the node (breaker, outlier detection and attempt failures do not
	// count it).
	RetryOnRefused = "429"
)

// DefaultRetryOn is every failure kind and the 429.
var DefaultRetryOn = []string{RetryOnConnect, RetryOnStatus, RetryOnTimeout, RetryOnRefused}

// Config configures a [Pool]. A zero field means "use the default" (see the
// Default* constants); negative durations or counts are errors.
type Config struct {
	// Nodes are the base URLs of the model nodes, e.g. http://127.0.0.1:9001;
	// a call's path is appended (a base URL may carry a path prefix:
	// http://host/openai). At least one; scheme http or https; no
	// duplicates; no query, fragment or user:password (the address is
	// logged and labels metrics: credentials go in Headers).
	Nodes []string `yaml:"nodes" json:"nodes"`
	// HealthPath is the path probed by active health checks (GET, 200 = up).
	HealthPath string `yaml:"health_path" json:"health_path"`
	// HealthInterval is the period of active health checks.
	HealthInterval time.Duration `yaml:"health_interval" json:"health_interval"`
	// HealthTimeout bounds one check. It is separate from the interval
	// because a saturated 2-core machine can stall a healthy node's answer
	// for hundreds of milliseconds.
	HealthTimeout time.Duration `yaml:"health_timeout" json:"health_timeout"`
	// UnhealthyThreshold is how many checks in a row must fail by timeout or
	// status before a node is marked down. A refused connection (nothing
	// listens: the process is gone) marks it down at once; one good check
	// marks it up.
	UnhealthyThreshold int `yaml:"unhealthy_threshold" json:"unhealthy_threshold"`
	// Breaker configures the per-node circuit breaker.
	Breaker BreakerConfig `yaml:"breaker" json:"breaker"`
	// RetryBudget bounds retries to a fraction of recent requests.
	RetryBudget RetryBudgetConfig `yaml:"retry_budget" json:"retry_budget"`
	// MinServiceTime: no call is made when the caller's remaining deadline is
	// below this (Do returns ErrDeadline). Zero: only an expired deadline
	// prevents the call.
	MinServiceTime time.Duration `yaml:"min_service_time" json:"min_service_time"`
	// MaxIdleConnsPerHost bounds kept-alive connections per node. Default
	// 512: Go's default of 2 costs about a third of loopback throughput and
	// leaves thousands of sockets in TIME_WAIT under load.
	MaxIdleConnsPerHost int `yaml:"max_idle_conns_per_host" json:"max_idle_conns_per_host"`
	// DialTimeout bounds establishing a TCP connection to a node.
	DialTimeout time.Duration `yaml:"dial_timeout" json:"dial_timeout"`
	// IdleConnTimeout closes a kept-alive connection to a node that has
	// been idle this long. Default 90 s (Go's). Set it below the nodes'
	// own keep-alive timeout (uvicorn, which serves vLLM, closes after
	// 5 s; Node.js after 5 s) so that the gateway, not the node, closes
	// idle connections: a call sent just as the node closes one fails
	// (retried once on a new connection, see Pool.Send), which costs a
	// round trip.
	IdleConnTimeout time.Duration `yaml:"idle_conn_timeout" json:"idle_conn_timeout"`
	// Headers are set on every request to the nodes, model calls and
	// health checks alike: a backend's API key ({Authorization: "Bearer
	// …"}, Azure's api-key) or a routing header. The gateway config file
	// replaces ${NAME} in a value with the environment variable NAME, so
	// the key stays out of the file. Names are HTTP tokens, unique
	// ignoring case, and not one the gateway sets itself (Host,
	// Content-Type, Content-Length, hop-by-hop headers, the deadline
	// header). The clients' own headers, their Authorization included,
	// are never forwarded.
	Headers map[string]string `yaml:"headers" json:"-"`

	// RetryOn lists the failures a call is retried on, on another node,
	// within the retry budget: connect, 5xx, timeout, 429 (see
	// RetryOnRefused). Empty: all four. Any other 4xx is never retried:
	// the node answered.
	RetryOn []string `yaml:"retry_on" json:"retry_on"`
	// LatencyWindow is how far back each node's observed latencies (time
	// to the first byte of the answer, per call class) are kept for the
	// attempt timeouts, the hedge delay and the outlier latency rule.
	LatencyWindow time.Duration `yaml:"latency_window" json:"latency_window"`
	// AttemptTimeout abandons an attempt that takes far longer than its
	// node usually does, so the call can go to another node in time.
	AttemptTimeout AttemptTimeoutConfig `yaml:"attempt_timeout" json:"attempt_timeout"`
	// Hedge sends a second attempt for important calls that are slower
	// than usual (The Tail at Scale).
	Hedge HedgeConfig `yaml:"hedge" json:"hedge"`
	// Outlier takes nodes whose failures or latency stand out from their
	// peers' out of rotation (Envoy's outlier detection).
	Outlier OutlierConfig `yaml:"outlier" json:"outlier"`
}

// AttemptTimeoutConfig derives each attempt's timeout from its node's
// recent latency for the call's class: Multiplier × the Quantile of the
// node's time to first byte (its peers', while the node has fewer than
// MinSamples), at least Min. It is cut so that a retry (at the peers'
// Quantile) still fits in the caller's deadline when that leaves the
// attempt its node's median, and never exceeds the deadline. Before any measurement there is no attempt
// timeout: the caller's deadline alone bounds the attempt. A timeout
// abandons its attempt only when something can take its place — a hedge
// in flight, or a retry (RetryOn has "timeout", a node is left untried
// that is up and whose breaker is not open, the budget has a token) —
// else the attempt runs on to the deadline. An
// abandoned attempt's request is cancelled (the node sees the
// disconnect) and counts as a failure of the node.
type AttemptTimeoutConfig struct {
	// Disabled turns attempt timeouts off.
	Disabled bool `yaml:"disabled" json:"disabled"`
	// Quantile of the node's latency; in (0,1), default 0.99.
	Quantile float64 `yaml:"quantile" json:"quantile"`
	// Multiplier on that quantile; ≥ 1, default 2.
	Multiplier float64 `yaml:"multiplier" json:"multiplier"`
	// Min is the floor of a derived timeout (default 50ms): room for the
	// gateway's own scheduling jitter, not for any node's speed.
	Min time.Duration `yaml:"min" json:"min"`
	// MinSamples a latency window needs before its quantile is used
	// (default 20); also the hedge delay's.
	MinSamples int `yaml:"min_samples" json:"min_samples"`
}

// HedgeConfig configures hedged requests: when a P0 call's attempt has had
// no first byte after the Quantile of its node's latency (capped at its
// peers', so a slow node is hedged at the speed of the others), one
// second attempt goes to another node; the first good answer wins and the
// other attempt is cancelled. Hedges draw on their own token budget (Ratio
// of hedge-eligible calls, MinPerSecond reserve), never on the retry
// budget. P2 calls are never hedged; P1 calls only with IncludeP1. A call
// is hedged at most once, and only before its answer's first byte (so a
// stream is hedged on its time to first token, never after bytes reached
// the client).
type HedgeConfig struct {
	// Disabled turns hedging off.
	Disabled bool `yaml:"disabled" json:"disabled"`
	// Quantile of the node's latency after which a hedge is sent; in
	// (0,1), default 0.95.
	Quantile float64 `yaml:"quantile" json:"quantile"`
	// Ratio of hedge-eligible calls that may be hedged; in (0,1], default 0.1.
	Ratio float64 `yaml:"ratio" json:"ratio"`
	// MinPerSecond hedges are always allowed (≥ 0, and × the retry
	// budget's TTL at most MaxReserveTokens; default none).
	MinPerSecond float64 `yaml:"min_per_second" json:"min_per_second"`
	// IncludeP1 hedges P1 calls too (default P0 only).
	IncludeP1 bool `yaml:"include_p1" json:"include_p1"`
}

// OutlierConfig configures outlier ejection, beside the breaker: a node is
// ejected when ConsecutiveFailures attempts in a row failed, or — checked
// every Interval over the last Window, once the node made MinRequests
// attempts — when its failure share exceeds its peers' pooled share by
// FailureRateExcess (and by three standard errors), or when its median
// latency for a class is LatencyRatio × its peers'. Failures are
// connection errors, 5xx and attempt timeouts. An ejected node gets no
// calls (unless no other node can take one: then it is a last resort) for
// BaseEjectionTime × 2^(ejections in a row − 1), at most MaxEjectionTime;
// then it is probed: up to ProbeRequests calls at a time
// (P0 ones only after it waited Interval on probation, or when no other
// node can take them), ProbeRequests successes bring
// it back, one failure ejects it again for twice as long. A node that
// stays in rotation for BaseEjectionTime forgets one ejection. At most
// MaxEjectionPercent of the nodes are out at once (at least one may be),
// and never the last node in rotation.
type OutlierConfig struct {
	Disabled            bool          `yaml:"disabled" json:"disabled"`
	Interval            time.Duration `yaml:"interval" json:"interval"`                         // default 1s
	Window              time.Duration `yaml:"window" json:"window"`                             // default 10s
	ConsecutiveFailures int           `yaml:"consecutive_failures" json:"consecutive_failures"` // default 5
	MinRequests         int           `yaml:"min_requests" json:"min_requests"`                 // default 20
	FailureRateExcess   float64       `yaml:"failure_rate_excess" json:"failure_rate_excess"`   // in (0,1]; default 0.1
	LatencyRatio        float64       `yaml:"latency_ratio" json:"latency_ratio"`               // > 1; default 2
	BaseEjectionTime    time.Duration `yaml:"base_ejection_time" json:"base_ejection_time"`     // default 10s
	MaxEjectionTime     time.Duration `yaml:"max_ejection_time" json:"max_ejection_time"`       // default 300s
	MaxEjectionPercent  float64       `yaml:"max_ejection_percent" json:"max_ejection_percent"` // in (0,100]; default 10
	ProbeRequests       int           `yaml:"probe_requests" json:"probe_requests"`             // default 3
}

// BreakerConfig configures the per-node circuit breaker. The breaker opens
// when, within the rolling Window, at least MinRequests calls were recorded
// and the share of failures (connection errors and 5xx) is ≥ FailureRatio.
// It stays open for OpenFor, then lets HalfOpenProbes concurrent probes
// through: all succeeding closes it, any failing reopens it.
type BreakerConfig struct {
	FailureRatio   float64       `yaml:"failure_ratio" json:"failure_ratio"`       // in (0,1]; default 0.5
	MinRequests    int           `yaml:"min_requests" json:"min_requests"`         // default 20
	Window         time.Duration `yaml:"window" json:"window"`                     // default 10s
	OpenFor        time.Duration `yaml:"open_for" json:"open_for"`                 // default 5s
	HalfOpenProbes int           `yaml:"half_open_probes" json:"half_open_probes"` // default 3
}

// RetryBudgetConfig configures the token retry budget (Finagle/Envoy style):
// every request deposits Ratio tokens, every retry withdraws one, deposits
// expire after TTL, and MinPerSecond×TTL tokens are always available, so
// retries ≤ Ratio × requests(TTL) + MinPerSecond × TTL.
type RetryBudgetConfig struct {
	Ratio float64 `yaml:"ratio" json:"ratio"` // in (0,1]; default 0.1
	// MinPerSecond ≥ 0, and × TTL at most MaxReserveTokens; zero means no
	// reserve (not defaulted).
	MinPerSecond float64       `yaml:"min_per_second" json:"min_per_second"`
	TTL          time.Duration `yaml:"ttl" json:"ttl"` // default 10s
	// P0Reserve is the share of the budget only P0 retries may spend; in
	// (0,1), default 0.5 (see RetryBudget).
	P0Reserve float64 `yaml:"p0_reserve" json:"p0_reserve"`
	// Shared: no share is reserved, every priority spends the same budget
	// (first come, first served).
	Shared bool `yaml:"shared" json:"shared"`
}

// FieldError is a configuration error naming the field to blame, in the
// config file's spelling (e.g. "breaker.failure_ratio", "nodes[1]").
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return "upstream." + e.Field + ": " + e.Msg }

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.HealthPath == "" {
		c.HealthPath = DefaultHealthPath
	}
	if c.HealthInterval == 0 {
		c.HealthInterval = DefaultHealthInterval
	}
	if c.HealthTimeout == 0 {
		c.HealthTimeout = DefaultHealthTimeout
	}
	if c.UnhealthyThreshold == 0 {
		c.UnhealthyThreshold = DefaultUnhealthyThreshold
	}
	if c.MaxIdleConnsPerHost == 0 {
		c.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.IdleConnTimeout == 0 {
		c.IdleConnTimeout = DefaultIdleConnTimeout
	}
	c.Breaker = c.Breaker.WithDefaults()
	c.RetryBudget = c.RetryBudget.WithDefaults()
	if len(c.RetryOn) == 0 {
		c.RetryOn = slices.Clone(DefaultRetryOn)
	}
	if c.LatencyWindow == 0 {
		c.LatencyWindow = DefaultLatencyWindow
	}
	c.AttemptTimeout = c.AttemptTimeout.WithDefaults()
	c.Hedge = c.Hedge.WithDefaults()
	c.Outlier = c.Outlier.WithDefaults()
	return c
}

// WithDefaults returns a with every zero field set to its default.
func (a AttemptTimeoutConfig) WithDefaults() AttemptTimeoutConfig {
	if a.Quantile == 0 {
		a.Quantile = DefaultAttemptQuantile
	}
	if a.Multiplier == 0 {
		a.Multiplier = DefaultAttemptMultiplier
	}
	if a.Min == 0 {
		a.Min = DefaultAttemptMin
	}
	if a.MinSamples == 0 {
		a.MinSamples = DefaultMinSamples
	}
	return a
}

// WithDefaults returns h with every zero field (except MinPerSecond) set
// to its default.
func (h HedgeConfig) WithDefaults() HedgeConfig {
	if h.Quantile == 0 {
		h.Quantile = DefaultHedgeQuantile
	}
	if h.Ratio == 0 {
		h.Ratio = DefaultHedgeRatio
	}
	return h
}

// WithDefaults returns o with every zero field set to its default.
func (o OutlierConfig) WithDefaults() OutlierConfig {
	if o.Interval == 0 {
		o.Interval = DefaultOutlierInterval
	}
	if o.Window == 0 {
		o.Window = DefaultOutlierWindow
	}
	if o.ConsecutiveFailures == 0 {
		o.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if o.MinRequests == 0 {
		o.MinRequests = DefaultOutlierMinRequests
	}
	if o.FailureRateExcess == 0 {
		o.FailureRateExcess = DefaultFailureRateExcess
	}
	if o.LatencyRatio == 0 {
		o.LatencyRatio = DefaultLatencyRatio
	}
	if o.BaseEjectionTime == 0 {
		o.BaseEjectionTime = DefaultBaseEjectionTime
	}
	if o.MaxEjectionTime == 0 {
		o.MaxEjectionTime = DefaultMaxEjectionTime
	}
	if o.MaxEjectionPercent == 0 {
		o.MaxEjectionPercent = DefaultMaxEjectionPercent
	}
	if o.ProbeRequests == 0 {
		o.ProbeRequests = DefaultProbeRequests
	}
	return o
}

// WithDefaults returns b with every zero field set to its default.
func (b BreakerConfig) WithDefaults() BreakerConfig {
	if b.FailureRatio == 0 {
		b.FailureRatio = DefaultFailureRatio
	}
	if b.MinRequests == 0 {
		b.MinRequests = DefaultMinRequests
	}
	if b.Window == 0 {
		b.Window = DefaultBreakerWindow
	}
	if b.OpenFor == 0 {
		b.OpenFor = DefaultOpenFor
	}
	if b.HalfOpenProbes == 0 {
		b.HalfOpenProbes = DefaultHalfOpenProbes
	}
	return b
}

// WithDefaults returns r with every zero field (except MinPerSecond) set to
// its default.
func (r RetryBudgetConfig) WithDefaults() RetryBudgetConfig {
	if r.Ratio == 0 {
		r.Ratio = DefaultRetryRatio
	}
	if r.TTL == 0 {
		r.TTL = DefaultRetryTTL
	}
	if r.P0Reserve == 0 {
		r.P0Reserve = DefaultP0Reserve
	}
	return r
}
