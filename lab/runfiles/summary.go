package runfiles

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/levee-lab/levee/chaos"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
)

// Summary is summary.json: the outcome of one run (or one recording). The
// JSON names are fixed: other checks read them.
type Summary struct {
	Name      string    `json:"name"`
	Title     string    `json:"title"`
	Started   time.Time `json:"started"`
	DurationS float64   `json:"duration_s"` // load scheduling time
	Quick     bool      `json:"quick"`
	// Ended says how the recording ended: "done" (the experiment ran its
	// course), "stopped" (Stop or a signal ended it early) or "recording
	// stopped" (a dashboard recording).
	Ended string `json:"ended"`

	Offered uint64 `json:"offered"`
	// Outcomes has every outcome name (lab.Outcomes), zeros included.
	Outcomes map[string]uint64 `json:"outcomes"`
	// Unaccounted is offered minus the sum of outcomes: 0 for a finished
	// `levee run`. A dashboard recording started or stopped while requests
	// were in flight may differ by those requests.
	Unaccounted int64                      `json:"unaccounted"`
	ByPriority  map[string]PrioritySummary `json:"by_priority"`

	TargetRPS   float64 `json:"target_rps"`   // mean target asked of the generator
	AchievedRPS float64 `json:"achieved_rps"` // offered / duration
	GoodputRPS  float64 `json:"goodput_rps"`  // ok / duration
	// CapacityRPS is the mean over the run of live nodes × slots / mean
	// service time: the nodes' configured slots, and their configured mean
	// service time until enough requests finished to use the observed one
	// (a mix with streams holds slots longer than the configured latency).
	CapacityRPS float64 `json:"capacity_rps"`
	// CapacityMeasuredRPS is the nodes' mean completion rate over ticks
	// when every live node had all its slots busy; 0 when that never
	// happened.
	CapacityMeasuredRPS float64 `json:"capacity_measured_rps"`
	// GoodputRatio is ok over what the nodes could have served well:
	// Σ over 1 s buckets of min(offered, capacity × 1 s). At 10× overload
	// that is goodput / capacity; below capacity it is ok / offered. Requests
	// offered near the end and answered after load stopped count as ok, so
	// a fully served run can read slightly above 1.
	GoodputRatio      float64        `json:"goodput_ratio"`
	AdmittedP50Ms     float64        `json:"admitted_p50_ms"`
	AdmittedP99Ms     float64        `json:"admitted_p99_ms"`
	Gateway           GatewaySummary `json:"gateway"`
	AchievedRateError float64        `json:"achieved_rate_error"`
	// ShedByReason is the client-observed sheds by reason (ratelimit, …).
	ShedByReason map[string]uint64 `json:"shed_by_reason"`
	ShedCheck    ShedCheck         `json:"shed_check"`
	// Faults has one entry per window a fault was active in, in time
	// order: an apply while the fault was active joins its window (see
	// faultApplied); a fault active when the recording began starts at 0.
	Faults []FaultSummary `json:"faults,omitempty"`
	// Agent is the agent tasks' outcome (seed 004); nil without agents.
	Agent *AgentSummary `json:"agent,omitempty"`
	// Recovery is how goodput came back after the faults ended (nil
	// without faults, or with one active at the end).
	Recovery *RecoverySummary `json:"recovery,omitempty"`
	// ClientAttempts counts the attempts the clients sent: Offered requests
	// plus ClientRetries (their retry policy, and GETs Go's HTTP client
	// resent on its own: load.Totals.Resent); ClientRetriesDenied are the
	// retries their retry budget refused.
	ClientAttempts      uint64 `json:"client_attempts,omitempty"`
	ClientRetries       uint64 `json:"client_retries,omitempty"`
	ClientRetriesDenied uint64 `json:"client_retries_denied,omitempty"`

	// UpstreamAttempts is how many attempts the gateways sent to nodes from
	// the first sample on (first tries, retries, hedges; a gateway restart
	// loses its count), and AttemptsPerAdmitted that over the admitted
	// requests (ok, fallback, timeout, error).
	UpstreamAttempts    float64 `json:"upstream_attempts"`
	AttemptsPerAdmitted float64 `json:"attempts_per_admitted"`

	// Redis is the Redis the gateways shared their limits through (kind
	// off without one), its fallbacks and failovers.
	Redis RedisSummary `json:"redis"`
	// RateLimit measures the global rate limit per priority; nil when no
	// rule covers one priority's traffic with one bucket.
	RateLimit *RateLimitSummary `json:"rate_limit,omitempty"`

	Thresholds map[string]ThresholdResult `json:"thresholds"`
	// FaultStepErrors are the experiment's fault steps (its faults:
	// timeline) that failed to apply or to revert during the recording,
	// in order, each naming the step: the run did not play the experiment
	// as written.
	FaultStepErrors []string `json:"fault_step_errors,omitempty"`
	// WriteErrors, set when the recorder failed to append lines to
	// samples.jsonl or events.jsonl (a full disk, say), counts the lines
	// missing from each and gives the first error: the files lack those
	// ticks and events. Nil when every line was written.
	WriteErrors *WriteErrors `json:"write_errors,omitempty"`
	// Pass is true when every threshold passed and no fault step failed.
	Pass bool `json:"pass"`
}

// missingFields names the fields of a summary.json that every summary has
// (Aggregator.Summarize has always set them: the experiment's name, which
// an experiment requires, the start, and the outcome counts overall and by
// priority, zeros included) and s lacks; nil when none is missing. A file
// without them is not a run's summary: reading it as one would show a run
// with a blank name and zeros.
func (s *Summary) missingFields() []string {
	var missing []string
	if s.Name == "" {
		missing = append(missing, "name")
	}
	if s.Started.IsZero() {
		missing = append(missing, "started")
	}
	if s.Outcomes == nil {
		missing = append(missing, "outcomes")
	}
	if s.ByPriority == nil {
		missing = append(missing, "by_priority")
	}
	return missing
}

// PrioritySummary is one priority class.
type PrioritySummary struct {
	Offered     uint64  `json:"offered"`
	OK          uint64  `json:"ok"`
	SuccessRate float64 `json:"success_rate"` // ok / offered; 1 when nothing was offered
	P50Ms       float64 `json:"p50_ms"`       // latency of sent requests, any outcome
	P99Ms       float64 `json:"p99_ms"`
	// Outcomes counts this priority's requests by outcome (every name in
	// lab.Outcomes, zeros included), so a success rate below 1 shows what
	// the failed requests got: fallback, error, timeout or a shed.
	Outcomes map[string]uint64 `json:"outcomes,omitempty"`
}

// GatewaySummary is the worst the gateways went through.
type GatewaySummary struct {
	LagP99Ms          float64 `json:"lag_p99_ms"`           // max over ticks of the probe's recent p99
	SchedLatencyP99Ms float64 `json:"sched_latency_p99_ms"` // max over ticks of the runtime's recent p99
	// MaxHeapBytes is the largest live heap any one gateway reached
	// (Sample.GatewayHeap), what its overload guard's heap signal reads.
	// In runs recorded before samples kept the largest gateway's heap, it
	// was the gateways' sum.
	MaxHeapBytes  float64 `json:"max_heap_bytes"`
	MaxGoroutines float64 `json:"max_goroutines"`
	// MaxRSSBytes is the largest RSS any one gateway reached
	// (Sample.GatewayRSS): the figure its pod memory limit applies to. In
	// summaries of runs with several gateways written before samples kept
	// the largest gateway's RSS, it was the gateways' sum.
	MaxRSSBytes float64 `json:"max_rss_bytes"`
	// RSSGrowthMB is how far RSS rose above its steady state: the largest
	// gateway RSS (Sample.GatewayRSS) from the first fault on minus the
	// largest before it (without faults: after the first quarter of the
	// run minus within it).
	RSSGrowthMB float64 `json:"rss_growth_mb"`
	OOMKills    int     `json:"oom_kills"`
	Restarts    int     `json:"restarts"` // gateway restarts for any reason
}

// ShedCheck compares the gateways' levee_shed_total with the sheds the
// client saw on every attempt (a shed attempt that was retried counts).
// Exact is false when a gateway restarted during the run (its counters
// since the last scrape before the kill are lost) or could not be scraped
// at an edge of a recording started while the lab ran.
//
// The two counts cover the same requests except those the client gave up
// on: a request whose client timed out may still reach a gateway and be
// shed there (on a loaded machine, after the client's deadline), or a shed
// answer may be on its way when the client's timer fires. InDoubt bounds
// them: the client's timeouts (the gateways' own 504s included, which makes
// it an upper bound). Client ≤ Gateway ≤ Client + InDoubt holds when
// accounting is right; Mismatch is how far Gateway falls outside that
// range: with no client timeouts, the difference of the two counts.
//
// A recording started while the lab ran has requests in flight at both
// edges: Gateway is then the counters' increase between a scrape at its
// start and one at its end, Client the sheds the clients saw that the
// gateways must have counted in between, and InDoubt also holds the sheds
// they may have counted on either side (decided while a scrape ran, or by
// a request in flight across one).
type ShedCheck struct {
	Gateway  uint64 `json:"gateway"`
	Client   uint64 `json:"client"`
	InDoubt  uint64 `json:"in_doubt"`
	Mismatch uint64 `json:"mismatch"`
	Exact    bool   `json:"exact"`
}

// NewShedCheck returns the check of the gateways' count against the
// clients' count, within inDoubt.
func NewShedCheck(gateway, client, inDoubt uint64, exact bool) ShedCheck {
	return ShedCheck{Gateway: gateway, Client: client, InDoubt: inDoubt, Mismatch: shedMismatch(gateway, client, inDoubt), Exact: exact}
}

// shedMismatch is how far gateway falls outside [client, client+inDoubt].
func shedMismatch(gateway, client, inDoubt uint64) uint64 {
	switch {
	case gateway < client:
		return client - gateway
	case gateway > client+inDoubt:
		return gateway - client - inDoubt
	}
	return 0
}

// FaultSummary is one fault application.
type FaultSummary struct {
	Fault string  `json:"fault"`
	AtS   float64 `json:"at_s"`
	EndS  float64 `json:"end_s"` // revert time, or the end of the run
	// P0SuccessRate is P0 ok / P0 finished over [at, end + client timeout]
	// (requests offered during the fault finish up to a timeout later);
	// null when no P0 request finished in that window: nothing was
	// measured. (Summaries written before it could be null say 1 there.)
	P0SuccessRate *float64 `json:"p0_success_rate"`
	// For node_kill: the live slots after the kill, and when the trailing
	// 3 s median of the gateways' summed concurrency limit entered ±15 % of
	// them for good (until the fault ended).
	LiveSlots    float64 `json:"live_slots,omitempty"`
	LimitSettleS float64 `json:"limit_settle_s,omitempty"`
	Settled      bool    `json:"settled,omitempty"`
}

// Metric returns the value of a threshold metric (see ThresholdMetrics) and
// a note when the value needs one.
func (s *Summary) Metric(name string) (float64, string) {
	rate := func(o string) float64 {
		if s.Offered == 0 {
			return 0
		}
		return float64(s.Outcomes[o]) / float64(s.Offered)
	}
	switch name {
	case "p0_success_rate", "p1_success_rate", "p2_success_rate":
		return s.ByPriority[strings.ToUpper(name[:2])].SuccessRate, ""
	case "goodput_rps":
		return s.GoodputRPS, ""
	case "goodput_ratio":
		return s.GoodputRatio, ""
	case "capacity_rps":
		return s.CapacityRPS, ""
	case "unaccounted":
		return float64(s.Unaccounted), ""
	case "oom_kills":
		return float64(s.Gateway.OOMKills), ""
	case "lag_p99_ms":
		return s.Gateway.LagP99Ms, ""
	case "sched_latency_p99_ms":
		return s.Gateway.SchedLatencyP99Ms, ""
	case "max_heap_bytes":
		return s.Gateway.MaxHeapBytes, ""
	case "max_goroutines":
		return s.Gateway.MaxGoroutines, ""
	case "rss_growth_mb":
		return s.Gateway.RSSGrowthMB, ""
	case "admitted_p99_ms":
		return s.AdmittedP99Ms, ""
	case "p0_p99_ms":
		return s.ByPriority[wire.PriorityP0].P99Ms, ""
	case "achieved_rate_error":
		return s.AchievedRateError, ""
	case "shed_mismatch":
		if !s.ShedCheck.Exact {
			return float64(s.ShedCheck.Mismatch), "a gateway restarted or went unscraped at an edge: its counters since the last scrape are lost"
		}
		return float64(s.ShedCheck.Mismatch), ""
	case "limit_settle_s":
		worst, note, found := 0.0, "", false
		for _, f := range s.Faults {
			if chaos.Default.Effect(f.Fault) != chaos.EffectNodeLoss || f.LiveSlots == 0 {
				continue // no kill, or nothing left alive to settle to
			}
			found = true
			if f.LimitSettleS >= worst {
				worst = f.LimitSettleS
			}
			if !f.Settled {
				note = fmt.Sprintf("the limit never settled within ±%.0f%% of %g live slots (value: seconds observed)", settleBand*100, f.LiveSlots)
			}
		}
		if !found {
			return math.NaN(), fmt.Sprintf("no %s fault in this run", chaos.EffectNodeLoss)
		}
		if note != "" {
			return math.Inf(1), note
		}
		return worst, ""
	case "p0_success_during_faults":
		return s.p0DuringFaults()
	case "attempts_per_admitted":
		return s.AttemptsPerAdmitted, ""
	case "global_limit_error", "global_limit_error_during_faults", "redis_fallbacks", "redis_failover_s":
		return s.redisMetric(name)
	case "error_rate":
		return rate(wire.OutcomeError.String()), ""
	case "timeout_rate":
		return rate(wire.OutcomeTimeout.String()), ""
	case "generator_dropped":
		return float64(s.Outcomes[wire.OutcomeGeneratorDropped.String()]), ""
	case "agent_task_success_rate", "agent_max_level", "agent_levels_reached":
		return s.agentMetric(name)
	case "recovery_s", "goodput_ratio_after_faults":
		return s.recoveryMetric(name)
	case "client_retry_ratio":
		if s.Offered == 0 {
			return 0, ""
		}
		return round(float64(s.ClientRetries)/float64(s.Offered), 6), ""
	}
	return math.NaN(), "unknown metric"
}

// p0DuringFaults is the lowest P0 success rate over the faults' windows
// in which a P0 request finished. With no such window (no fault, or no P0
// traffic) nothing was measured: NaN and a note, so that a threshold on it
// is not met, as limit_settle_s without a kill.
func (s *Summary) p0DuringFaults() (float64, string) {
	if len(s.Faults) == 0 {
		return math.NaN(), "no fault in this run"
	}
	v, found := 1.0, false
	// A run offered no P0 at all measured nothing in any window, whatever
	// an older summary.json wrote there (1).
	if s.ByPriority[wire.PriorityP0].Offered > 0 {
		for _, f := range s.Faults {
			if f.P0SuccessRate != nil {
				v, found = math.Min(v, *f.P0SuccessRate), true
			}
		}
	}
	if !found {
		return math.NaN(), "no P0 request finished during a fault"
	}
	return v, ""
}

// FailedThresholds lists the failed thresholds as "name = value, want expr".
func (s *Summary) FailedThresholds() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(s.Thresholds)) {
		r := s.Thresholds[name]
		if !r.Pass {
			line := fmt.Sprintf("%s = %s, want %s", name, fmtValue(r.Value), r.Expr)
			if r.Note != "" {
				line += " (" + r.Note + ")"
			}
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}

func fmtValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "never"
	case math.IsNaN(v):
		return "n/a"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// shedReason returns the shed reason of the outcome named o ("overload" for
// "shed_overload"), and false when o is not a shed.
func shedReason(o string) (string, bool) {
	out, ok := wire.ParseOutcome(o)
	if !ok {
		return "", false
	}
	r, ok := out.ShedReason()
	return r.String(), ok
}

// setOutcomes sets the outcome counts (every outcome, zeros included), the
// sheds by reason and Unaccounted (s.Offered must be set), and returns the
// sheds in all.
func (s *Summary) setOutcomes(counts map[string]uint64) (shed uint64) {
	s.Outcomes = map[string]uint64{}
	s.ShedByReason = map[string]uint64{}
	var sum uint64
	for _, o := range load.Outcomes {
		n := counts[o]
		s.Outcomes[o] = n
		sum += n
		if r, ok := shedReason(o); ok {
			s.ShedByReason[r] = n
			shed += n
		}
	}
	s.Unaccounted = int64(s.Offered) - int64(sum)
	return shed
}

// WriteErrors counts the lines a Recorder failed to append to each file
// and keeps the first error.
type WriteErrors struct {
	SamplesLost int    `json:"samples_lost"`
	EventsLost  int    `json:"events_lost"`
	First       string `json:"first"`
}

// String says how many lines each file lacks, and the first error.
func (w WriteErrors) String() string {
	return fmt.Sprintf("%d lines not written to %s and %d to %s; the first error: %s", w.SamplesLost, SamplesFile, w.EventsLost, EventsFile, w.First)
}
