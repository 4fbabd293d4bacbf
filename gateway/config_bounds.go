package gateway

import (
	"errors"
	"net"
	"time"

	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/openai"
	"github.com/levee-lab/levee/internal/wire"
)

// Upper bounds of the configuration. Each is far above any sane setting
// and far below where the arithmetic it feeds (a byte count, a duration
// in nanoseconds, a token sum) could overflow or a single request could
// hold the process.
const (
	maxBodyLimit      = 64 << 20                // body_limit_bytes
	maxAnswerLimit    = 1 << 30                 // routes.embeddings.answer_limit_bytes
	maxMaxTokensLimit = openai.MaxTokensCeiling // max_tokens_limit (16,777,216: × n 128 stays far inside int64)
	maxHeaderBytes    = 1 << 20                 // max_header_bytes
	maxServerTimeout  = time.Hour               // read_header/idle/drain/write timeouts, guard periods
	maxRouteTimeout   = 24 * time.Hour          // routes.*.timeout (X-Levee-Deadline-Ms is capped there too)
	maxQueueTimeout   = time.Hour               // classes.*.queue_timeout, limiter timeout_ms
	maxStoreTimeout   = time.Minute             // ratelimit.store.timeout
	maxRuleUnits      = ratelimit.MaxUnits      // limit, burst, replenish_rate of a rule (windows and refill: ratelimit.MinWindow, MaxWindow, MaxRefill)
	maxClassLimit     = 1_000_000               // a class's max concurrency
	maxQueueSize      = 1_000_000               // a class's or the agent's queue
	maxTokenBudget    = 1 << 40                 // token_budget, complex_tokens
	maxFanOut         = 64                      // agent.fan_out
	maxAgentDepth     = 16                      // agent.max_depth
	maxSubcalls       = 100_000                 // agent.max_subcalls_inflight
	maxStreamBuffer   = 16 << 20                // stream.buffer_bytes
	maxExportRows     = 1_000_000_000           // stream.export_max_rows
	maxExportRowBytes = 1 << 20                 // stream.export_row_bytes
	maxIdleConns      = 100_000                 // upstream.max_idle_conns_per_host
	maxDurationMs     = int64(1<<63-1) / 1e6    // the most milliseconds a time.Duration holds
)

// validateServer checks the listeners, the admin API's exposure and token,
// and the server's limits.
func (c *Config) validateServer() error {
	if c.Admin == "" {
		return fieldErr("admin", "must not be empty")
	}
	if !c.AdminAllowRemote && !loopbackAddr(c.Admin) {
		return fieldErr("admin", "%q is not a loopback address; set admin_allow_remote: true to expose the admin API beyond this machine (its bearer token is then all that guards it)", c.Admin)
	}
	if c.AdminToken != "" && len(c.AdminToken) < wire.MinAdminTokenLen {
		return fieldErr("admin_token", "must be at least %d characters (got %d)", wire.MinAdminTokenLen, len(c.AdminToken))
	}
	if msg := wire.KeyProblem(c.AdminToken); msg != "" {
		return fieldErr("admin_token", "%s: no request could carry it", msg)
	}
	switch {
	case c.MaxTokensLimit < 1 || c.MaxTokensLimit > maxMaxTokensLimit:
		return fieldErr("max_tokens_limit", "must be an integer in [1, %d] (got %d)", maxMaxTokensLimit, c.MaxTokensLimit)
	case c.BodyLimitBytes < 1 || c.BodyLimitBytes > maxBodyLimit:
		return fieldErr("body_limit_bytes", "must be in [1, %d] (got %d)", maxBodyLimit, c.BodyLimitBytes)
	case c.ReadHeaderTimeout <= 0 || c.ReadHeaderTimeout > maxServerTimeout:
		return fieldErr("read_header_timeout", "must be in (0, %s] (got %s)", maxServerTimeout, c.ReadHeaderTimeout)
	case c.MaxHeaderBytes < 1024 || c.MaxHeaderBytes > maxHeaderBytes:
		return fieldErr("max_header_bytes", "must be in [1024, %d] (got %d)", maxHeaderBytes, c.MaxHeaderBytes)
	case c.IdleTimeout <= 0 || c.IdleTimeout > maxServerTimeout:
		return fieldErr("idle_timeout", "must be in (0, %s] (got %s)", maxServerTimeout, c.IdleTimeout)
	case c.DrainTimeout <= 0 || c.DrainTimeout > maxServerTimeout:
		return fieldErr("drain_timeout", "must be in (0, %s] (got %s)", maxServerTimeout, c.DrainTimeout)
	case c.DrainDelay < 0 || c.DrainDelay >= c.DrainTimeout:
		return fieldErr("drain_delay", "must be in [0, drain_timeout=%s) (got %s): the delay is part of the drain", c.DrainTimeout, c.DrainDelay)
	case c.Upstream.MaxIdleConnsPerHost > maxIdleConns:
		return fieldErr("upstream.max_idle_conns_per_host", "must be in [1, %d] (got %d)", maxIdleConns, c.Upstream.MaxIdleConnsPerHost)
	}
	return nil
}

// loopbackAddr reports whether a listen address binds loopback only
// (127.0.0.0/8, ::1 or localhost). An empty host binds every interface.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// budgetConfig is the token budget's configuration: Budget with its
// tokens from TokenBudget.
func (c *Config) budgetConfig() admit.BudgetConfig {
	b := c.Budget
	b.Tokens = c.TokenBudget
	return b
}

// validateBudget checks token_budget and the budget section.
func (c *Config) validateBudget() error {
	if c.TokenBudget < 1 || c.TokenBudget > maxTokenBudget {
		return fieldErr("token_budget", "must be in [1, %d] (got %d)", int64(maxTokenBudget), c.TokenBudget)
	}
	if err := c.budgetConfig().Validate(); err != nil {
		var fe *admit.BudgetFieldError
		if errors.As(err, &fe) {
			return fieldErr("budget."+fe.Field, "%s", fe.Msg)
		}
		return fieldErr("budget", "%v", err)
	}
	return nil
}

// msDuration converts a millisecond count from an API body into a
// duration, or reports that it is out of [lo, hi] — before the
// multiplication, which would overflow for a large count.
func msDuration(ms int64, lo, hi time.Duration) (time.Duration, bool) {
	if ms < lo.Milliseconds() || ms > hi.Milliseconds() || ms > maxDurationMs {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}
