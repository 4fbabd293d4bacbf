package upstream

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by [Config.WithDefaults] (and so by [New]) to zero fields.
const (
	DefaultHealthPath          = "/healthz"
	DefaultHealthInterval      = 500 * time.Millisecond
	DefaultHealthTimeout       = 2 * time.Second
	DefaultUnhealthyThreshold  = 3
	DefaultMaxIdleConnsPerHost = 512
	DefaultDialTimeout         = time.Second

	DefaultFailureRatio   = 0.5
	DefaultMinRequests    = 20
	DefaultBreakerWindow  = 10 * time.Second
	DefaultOpenFor        = 5 * time.Second
	DefaultHalfOpenProbes = 3

	DefaultRetryRatio = 0.1
	DefaultRetryTTL   = 10 * time.Second
)

// Config configures a [Pool]. A zero field means "use the default" (see the
// Default* constants); negative durations or counts are errors.
type Config struct {
	// Nodes are the base URLs of the model nodes, e.g. http://127.0.0.1:9001.
	// At least one; scheme http or https; no duplicates.
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
	Ratio        float64       `yaml:"ratio" json:"ratio"`                   // in (0,1]; default 0.1
	MinPerSecond float64       `yaml:"min_per_second" json:"min_per_second"` // ≥ 0; zero means no reserve (not defaulted)
	TTL          time.Duration `yaml:"ttl" json:"ttl"`                       // default 10s
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
	c.Breaker = c.Breaker.WithDefaults()
	c.RetryBudget = c.RetryBudget.WithDefaults()
	return c
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
	return r
}

// Validate reports the first bad field as a *FieldError. Zero fields are
// valid (they mean "default").
func (c Config) Validate() error {
	if len(c.Nodes) == 0 {
		return &FieldError{"nodes", "at least one node URL is required"}
	}
	seen := make(map[string]int, len(c.Nodes))
	for i, n := range c.Nodes {
		f := fmt.Sprintf("nodes[%d]", i)
		u, err := url.Parse(n)
		if err != nil {
			return &FieldError{f, fmt.Sprintf("%q is not a URL: %v", n, err)}
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return &FieldError{f, fmt.Sprintf("%q: scheme must be http or https", n)}
		}
		if u.Host == "" {
			return &FieldError{f, fmt.Sprintf("%q has no host", n)}
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return &FieldError{f, fmt.Sprintf("%q: a base URL takes no query or fragment", n)}
		}
		key := strings.TrimRight(n, "/")
		if j, dup := seen[key]; dup {
			return &FieldError{f, fmt.Sprintf("%q duplicates nodes[%d]", n, j)}
		}
		seen[key] = i
	}
	if c.HealthPath != "" && !strings.HasPrefix(c.HealthPath, "/") {
		return &FieldError{"health_path", fmt.Sprintf("%q must start with /", c.HealthPath)}
	}
	if c.HealthInterval < 0 {
		return &FieldError{"health_interval", "must not be negative"}
	}
	if c.HealthTimeout < 0 {
		return &FieldError{"health_timeout", "must not be negative"}
	}
	if c.UnhealthyThreshold < 0 {
		return &FieldError{"unhealthy_threshold", "must not be negative"}
	}
	if c.MinServiceTime < 0 {
		return &FieldError{"min_service_time", "must not be negative"}
	}
	if c.MaxIdleConnsPerHost < 0 {
		return &FieldError{"max_idle_conns_per_host", "must not be negative"}
	}
	if c.DialTimeout < 0 {
		return &FieldError{"dial_timeout", "must not be negative"}
	}
	b := c.Breaker
	switch {
	case b.FailureRatio < 0 || b.FailureRatio > 1 || b.FailureRatio != b.FailureRatio:
		return &FieldError{"breaker.failure_ratio", fmt.Sprintf("%v is outside (0,1]", b.FailureRatio)}
	case b.MinRequests < 0:
		return &FieldError{"breaker.min_requests", "must not be negative"}
	case b.Window < 0:
		return &FieldError{"breaker.window", "must not be negative"}
	case b.OpenFor < 0:
		return &FieldError{"breaker.open_for", "must not be negative"}
	case b.HalfOpenProbes < 0:
		return &FieldError{"breaker.half_open_probes", "must not be negative"}
	}
	r := c.RetryBudget
	switch {
	case r.Ratio < 0 || r.Ratio > 1 || r.Ratio != r.Ratio:
		return &FieldError{"retry_budget.ratio", fmt.Sprintf("%v is outside (0,1]", r.Ratio)}
	case r.MinPerSecond < 0 || r.MinPerSecond != r.MinPerSecond:
		return &FieldError{"retry_budget.min_per_second", fmt.Sprintf("%v must be ≥ 0", r.MinPerSecond)}
	case r.TTL < 0:
		return &FieldError{"retry_budget.ttl", "must not be negative"}
	}
	return nil
}
