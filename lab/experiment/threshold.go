package experiment

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Threshold is one pass/fail check of a run, declared in an experiment as
// k6 does: `thresholds: {p0_success_rate: ">= 0.999"}`. Name is a metric of
// the summary (see ThresholdMetrics); Expr is the original text.
type Threshold struct {
	Name  string
	Expr  string
	Op    string  // one of >=, <=, ==, !=, >, <
	Value float64 // right-hand side
}

// ThresholdMetrics names every metric a threshold may test, with what it
// measures. The values come from the Summary (see Summary.Metric).
var ThresholdMetrics = map[string]string{
	"p0_success_rate":                  "P0 ok / P0 offered",
	"p1_success_rate":                  "P1 ok / P1 offered",
	"p2_success_rate":                  "P2 ok / P2 offered",
	"goodput_rps":                      "ok per second over the run",
	"goodput_ratio":                    "ok / what the nodes could have served (min(offered, capacity) over time)",
	"capacity_rps":                     "mean capacity: live nodes × slots / mean service time",
	"unaccounted":                      "offered minus the sum of outcomes",
	"oom_kills":                        "gateway OOM kills at the memory limit",
	"lag_p99_ms":                       "worst recent-window p99 of the gateway lag probe",
	"sched_latency_p99_ms":             "worst recent-window p99 of the gateway scheduler latency",
	"max_heap_bytes":                   "largest gateway heap seen (levee_heap_bytes)",
	"max_goroutines":                   "largest goroutine count seen, summed over the gateways (not per gateway, unlike max_heap_bytes)",
	"rss_growth_mb":                    "gateway RSS growth (MB): the largest gateway's max RSS from the first fault on minus its max before it",
	"admitted_p99_ms":                  "p99 latency of admitted requests",
	"p0_p99_ms":                        "p99 latency of P0 ok requests",
	"achieved_rate_error":              "|achieved − target| / target over the run",
	"shed_mismatch":                    "gateway shed counters outside [client-observed sheds, + client timeouts]",
	"limit_settle_s":                   "seconds from a node kill until the limit's trailing 3 s median stays within ±15% of the live slots",
	"p0_success_during_faults":         "lowest P0 ok / P0 finished over any fault's window (plus a client timeout); none when no P0 request finished in one",
	"attempts_per_admitted":            "upstream attempts (first tries, retries, hedges) / admitted requests",
	"error_rate":                       "error / offered",
	"timeout_rate":                     "timeout / offered",
	"generator_dropped":                "requests the generator could not send (outstanding cap)",
	"recovery_s":                       "seconds from the last fault's end until goodput / min(offered, capacity) stays at ≥ 80% of its level before the faults (1 s windows); never: +Inf",
	"goodput_ratio_after_faults":       "ok / min(offered, capacity) from the last fault's end to the end of the run",
	"client_retry_ratio":               "client retries / offered requests (client_retry)",
	"agent_task_success_rate":          "agent tasks answered (ok or fallback: the possibly degraded path answered in time) / offered",
	"agent_max_level":                  "highest agent level seen: 0 green, 1 yellow, 2 red, 3 black",
	"agent_levels_reached":             "how many agent levels tasks were planned at (1..4)",
	"global_limit_error":               "worst |admitted / limit − 1| of a rate-limited priority over spans offered ≥ 1.5× its limit, outside faults (all gateways together)",
	"global_limit_error_during_faults": "the same over spans that overlap a fault (to one limit span after its end)",
	"redis_fallbacks":                  "rate-limit decisions the gateways made without Redis (levee_ratelimit_store_fallback_total)",
	"redis_failover_s":                 "worst time from a cluster master's kill until a replica served its slots",
}

var thresholdOps = []string{">=", "<=", "==", "!=", ">", "<"}

// ParseThreshold parses "OP NUMBER" for the named metric.
func ParseThreshold(name, expr string) (Threshold, error) {
	if _, ok := ThresholdMetrics[name]; !ok {
		return Threshold{}, fmt.Errorf("threshold %q: unknown metric (known: %s)", name, strings.Join(sortedKeys(ThresholdMetrics), ", "))
	}
	s := strings.TrimSpace(expr)
	for _, op := range thresholdOps {
		if !strings.HasPrefix(s, op) {
			continue
		}
		rest := strings.TrimSpace(strings.TrimPrefix(s, op))
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Threshold{}, fmt.Errorf("threshold %q: %q: want OP NUMBER, e.g. \">= 0.999\"", name, expr)
		}
		return Threshold{Name: name, Expr: s, Op: op, Value: v}, nil
	}
	return Threshold{}, fmt.Errorf("threshold %q: %q: want one of %s followed by a number", name, expr, strings.Join(thresholdOps, " "))
}

// Check reports whether v satisfies the threshold.
func (t Threshold) Check(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch t.Op {
	case ">=":
		return v >= t.Value
	case "<=":
		return v <= t.Value
	case "==":
		return v == t.Value
	case "!=":
		return v != t.Value
	case ">":
		return v > t.Value
	case "<":
		return v < t.Value
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
