package upstream

import (
	"fmt"
	"math"
	"net/url"
	"strings"
)

// Validate reports the first bad field as a *FieldError. Zero fields are
// valid (they mean "default").
func (c Config) Validate() error {
	if err := validateNodes(c.Nodes); err != nil {
		return err
	}
	if c.HealthPath != "" && !strings.HasPrefix(c.HealthPath, "/") {
		return &FieldError{"health_path", fmt.Sprintf("%q must start with /", c.HealthPath)}
	}
	for _, d := range []struct {
		field string
		neg   bool
	}{
		{"health_interval", c.HealthInterval < 0}, {"health_timeout", c.HealthTimeout < 0},
		{"unhealthy_threshold", c.UnhealthyThreshold < 0}, {"min_service_time", c.MinServiceTime < 0},
		{"max_idle_conns_per_host", c.MaxIdleConnsPerHost < 0}, {"dial_timeout", c.DialTimeout < 0},
		{"idle_conn_timeout", c.IdleConnTimeout < 0}, {"latency_window", c.LatencyWindow < 0},
	} {
		if d.neg {
			return &FieldError{d.field, "must not be negative"}
		}
	}
	for _, check := range []func() error{
		c.Breaker.validate, c.RetryBudget.validate, c.validateRetryOn,
		c.AttemptTimeout.validate, c.Hedge.validate, c.Outlier.validate,
		c.validateReserves, c.validateHeaders,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// ValidateExplicit reports, as a *FieldError, the first field that is
// zero (or empty) where WithDefaults would put a default. A config that
// starts complete and is then decoded from a file (the gateway's starts
// from its DefaultConfig) holds such a zero only where the file wrote it,
// and reading that as "the default" would be a silent surprise: "retry_on:
// []" retrying on everything, "hedge: {ratio: 0}" hedging a tenth.
func (c Config) ValidateExplicit() error {
	b, r, a, h, o := c.Breaker, c.RetryBudget, c.AttemptTimeout, c.Hedge, c.Outlier
	for _, z := range []struct {
		field string
		zero  bool
	}{
		{"health_path", c.HealthPath == ""}, {"health_interval", c.HealthInterval == 0},
		{"health_timeout", c.HealthTimeout == 0}, {"unhealthy_threshold", c.UnhealthyThreshold == 0},
		{"max_idle_conns_per_host", c.MaxIdleConnsPerHost == 0}, {"dial_timeout", c.DialTimeout == 0},
		{"idle_conn_timeout", c.IdleConnTimeout == 0},
		{"breaker.failure_ratio", b.FailureRatio == 0}, {"breaker.min_requests", b.MinRequests == 0},
		{"breaker.window", b.Window == 0}, {"breaker.open_for", b.OpenFor == 0},
		{"breaker.half_open_probes", b.HalfOpenProbes == 0},
		{"retry_budget.ratio", r.Ratio == 0}, {"retry_budget.ttl", r.TTL == 0},
		{"retry_budget.p0_reserve", r.P0Reserve == 0},
		{"retry_on", len(c.RetryOn) == 0}, {"latency_window", c.LatencyWindow == 0},
		{"attempt_timeout.quantile", a.Quantile == 0}, {"attempt_timeout.multiplier", a.Multiplier == 0},
		{"attempt_timeout.min", a.Min == 0}, {"attempt_timeout.min_samples", a.MinSamples == 0},
		{"hedge.quantile", h.Quantile == 0}, {"hedge.ratio", h.Ratio == 0},
		{"outlier.interval", o.Interval == 0}, {"outlier.window", o.Window == 0},
		{"outlier.consecutive_failures", o.ConsecutiveFailures == 0}, {"outlier.min_requests", o.MinRequests == 0},
		{"outlier.failure_rate_excess", o.FailureRateExcess == 0}, {"outlier.latency_ratio", o.LatencyRatio == 0},
		{"outlier.base_ejection_time", o.BaseEjectionTime == 0}, {"outlier.max_ejection_time", o.MaxEjectionTime == 0},
		{"outlier.max_ejection_percent", o.MaxEjectionPercent == 0}, {"outlier.probe_requests", o.ProbeRequests == 0},
	} {
		if !z.zero {
			continue
		}
		msg := "must not be 0 or empty: leave it out for the default"
		if sec, _, _ := strings.Cut(z.field, "."); sec == "attempt_timeout" || sec == "hedge" || sec == "outlier" {
			msg += " (disabled: true turns " + sec + " off)"
		}
		return &FieldError{z.field, msg}
	}
	return nil
}

// MaxReserveTokens bounds a budget's reserve, min_per_second × the
// retry budget's ttl: far above any real retry or hedge rate, and far
// below where the budget's count of milli-tokens would overflow (which
// wrapped to a negative reserve: no retry or hedge at all).
const MaxReserveTokens = 1e12

// validateReserves checks the retry and hedge budgets' reserves (both
// expire after the retry budget's ttl) against MaxReserveTokens.
func (c Config) validateReserves() error {
	ttl := c.RetryBudget.TTL
	if ttl == 0 {
		ttl = DefaultRetryTTL
	}
	for _, r := range []struct {
		field string
		v     float64
	}{{"retry_budget.min_per_second", c.RetryBudget.MinPerSecond}, {"hedge.min_per_second", c.Hedge.MinPerSecond}} {
		if tokens := r.v * ttl.Seconds(); tokens > MaxReserveTokens {
			return &FieldError{r.field, fmt.Sprintf("%v × retry_budget.ttl %v is a reserve of %g tokens, above the most, %g", r.v, ttl, tokens, MaxReserveTokens)}
		}
	}
	return nil
}

func validateNodes(nodes []string) error {
	if len(nodes) == 0 {
		return &FieldError{"nodes", "at least one node URL is required"}
	}
	seen := make(map[string]int, len(nodes))
	for i, n := range nodes {
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
		if u.User != nil {
			return &FieldError{f, fmt.Sprintf("%q carries credentials, which the logs and the node label would show: put the backend's key in headers", u.Redacted())}
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
	return nil
}

func (b BreakerConfig) validate() error {
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
	return nil
}

func (r RetryBudgetConfig) validate() error {
	switch {
	case r.Ratio < 0 || r.Ratio > 1 || r.Ratio != r.Ratio:
		return &FieldError{"retry_budget.ratio", fmt.Sprintf("%v is outside (0,1]", r.Ratio)}
	case r.MinPerSecond < 0 || r.MinPerSecond != r.MinPerSecond:
		return &FieldError{"retry_budget.min_per_second", fmt.Sprintf("%v must be ≥ 0", r.MinPerSecond)}
	case r.TTL < 0:
		return &FieldError{"retry_budget.ttl", "must not be negative"}
	case !unitOpen(r.P0Reserve):
		return &FieldError{"retry_budget.p0_reserve", fmt.Sprintf("%v is outside (0,1)", r.P0Reserve)}
	}
	return nil
}

func (c Config) validateRetryOn() error {
	seen := map[string]bool{}
	for i, on := range c.RetryOn {
		switch on {
		case RetryOnConnect, RetryOnStatus, RetryOnTimeout, RetryOnRefused:
		default:
			return &FieldError{fmt.Sprintf("retry_on[%d]", i), fmt.Sprintf("%q is not one of %s, %s, %s, %s", on, RetryOnConnect, RetryOnStatus, RetryOnTimeout, RetryOnRefused)}
		}
		if seen[on] {
			return &FieldError{fmt.Sprintf("retry_on[%d]", i), fmt.Sprintf("%q is listed twice", on)}
		}
		seen[on] = true
	}
	return nil
}

func (a AttemptTimeoutConfig) validate() error {
	switch {
	case !unitOpen(a.Quantile):
		return &FieldError{"attempt_timeout.quantile", fmt.Sprintf("%v is outside (0,1)", a.Quantile)}
	case a.Multiplier != 0 && !(a.Multiplier >= 1 && a.Multiplier <= 1000):
		return &FieldError{"attempt_timeout.multiplier", fmt.Sprintf("%v is outside [1,1000]", a.Multiplier)}
	case a.Min < 0:
		return &FieldError{"attempt_timeout.min", "must not be negative"}
	case a.MinSamples < 0:
		return &FieldError{"attempt_timeout.min_samples", "must not be negative"}
	}
	return nil
}

func (h HedgeConfig) validate() error {
	switch {
	case !unitOpen(h.Quantile):
		return &FieldError{"hedge.quantile", fmt.Sprintf("%v is outside (0,1)", h.Quantile)}
	case h.Ratio < 0 || h.Ratio > 1 || h.Ratio != h.Ratio:
		return &FieldError{"hedge.ratio", fmt.Sprintf("%v is outside (0,1]", h.Ratio)}
	case h.MinPerSecond < 0 || h.MinPerSecond != h.MinPerSecond || math.IsInf(h.MinPerSecond, 0):
		return &FieldError{"hedge.min_per_second", fmt.Sprintf("%v must be ≥ 0", h.MinPerSecond)}
	}
	return nil
}

func (o OutlierConfig) validate() error {
	switch {
	case o.Interval < 0:
		return &FieldError{"outlier.interval", "must not be negative"}
	case o.Window < 0:
		return &FieldError{"outlier.window", "must not be negative"}
	case o.ConsecutiveFailures < 0:
		return &FieldError{"outlier.consecutive_failures", "must not be negative"}
	case o.MinRequests < 0:
		return &FieldError{"outlier.min_requests", "must not be negative"}
	case o.FailureRateExcess < 0 || o.FailureRateExcess > 1 || o.FailureRateExcess != o.FailureRateExcess:
		return &FieldError{"outlier.failure_rate_excess", fmt.Sprintf("%v is outside (0,1]", o.FailureRateExcess)}
	case o.LatencyRatio != 0 && !(o.LatencyRatio > 1 && o.LatencyRatio <= 1000):
		return &FieldError{"outlier.latency_ratio", fmt.Sprintf("%v is outside (1,1000]", o.LatencyRatio)}
	case o.BaseEjectionTime < 0:
		return &FieldError{"outlier.base_ejection_time", "must not be negative"}
	case o.MaxEjectionTime < 0:
		return &FieldError{"outlier.max_ejection_time", "must not be negative"}
	case o.MaxEjectionTime != 0 && o.MaxEjectionTime < o.BaseEjectionTime:
		return &FieldError{"outlier.max_ejection_time", fmt.Sprintf("%v is below base_ejection_time %v", o.MaxEjectionTime, o.BaseEjectionTime)}
	case o.MaxEjectionPercent < 0 || o.MaxEjectionPercent > 100 || o.MaxEjectionPercent != o.MaxEjectionPercent:
		return &FieldError{"outlier.max_ejection_percent", fmt.Sprintf("%v is outside (0,100]", o.MaxEjectionPercent)}
	case o.ProbeRequests < 0:
		return &FieldError{"outlier.probe_requests", "must not be negative"}
	}
	return nil
}

// unitOpen reports whether q is zero (the default) or within (0,1).
func unitOpen(q float64) bool { return q == 0 || (q > 0 && q < 1) }
