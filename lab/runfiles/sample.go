package runfiles

import "time"

// Sample is everything the lab knows at one tick. The TUI and the recorder
// read only Samples; one Sample is one line of samples.jsonl. Rates (…RPS)
// are measured over the last tick; counters (…Total) are cumulative since the
// start of the run. Values the lab could not measure this tick are zero and
// the matching Stale flag says so — nothing is invented.
type Sample struct {
	Time    time.Time `json:"t"`
	Elapsed float64   `json:"elapsed_s"` // seconds since the run started
	// WindowS is the length in seconds of the load generator's window
	// the generator's rates (offered, outcomes, goodput, client retries)
	// were counted over: since its previous tick, about a tick but never
	// exactly. A finished run's summary weighs each tick by it, and a
	// killed run's rebuild does the same; 0 (absent) in runs recorded
	// before it was kept, whose rebuild uses the differences of Elapsed.
	WindowS float64 `json:"window_s,omitempty"`

	// Load generator, client side.
	TargetRPS  float64 `json:"target_rps"`  // what the schedule asks for now
	OfferedRPS float64 `json:"offered_rps"` // arrivals scheduled in the last tick
	// AdmittedRPS is the rate the gateways admitted requests at (their
	// levee_admitted_total, counted when admitted, over the scrape
	// interval). Counting admissions when the client saw them end made a
	// gateway's OOM kill, which ends thousands of admitted requests at once,
	// read as an admission rate no gateway could reach.
	AdmittedRPS float64 `json:"admitted_rps"`
	GoodputRPS  float64 `json:"goodput_rps"`  // outcome ok per second
	CapacityRPS float64 `json:"capacity_rps"` // live nodes × slots / mean service time (observed over ~5 s, else configured)
	// CapacityConfiguredRPS is the part of CapacityRPS taken from the
	// nodes' configured mean service time, for the live nodes on which
	// fewer than 50 requests finished in their last ~5 s (just started,
	// restarted, or idle): an estimate, not a measurement. 0 when every
	// live node's service time was measured; absent in runs recorded
	// before it was kept, which cannot tell.
	CapacityConfiguredRPS float64 `json:"capacity_configured_rps,omitempty"`
	Outstanding           int     `json:"outstanding"` // requests in flight from the generator
	// ClientRetryRPS is the clients' retries sent per second (attempts
	// after a request's first; see the experiment's client_retry). Offered
	// counts original requests only: the gateway sees offered + retries.
	// The gateways' own upstream retries are RetryRPS.
	ClientRetryRPS           float64 `json:"client_retry_rps,omitempty"`
	ClientRetriesTotal       uint64  `json:"client_retries_total,omitempty"`
	ClientRetriesDeniedTotal uint64  `json:"client_retries_denied_total,omitempty"` // refused by the clients' retry budget

	// OutcomeRPS and OutcomeTotal are keyed by the outcome names above.
	OutcomeRPS   map[string]float64 `json:"outcome_rps"`
	OutcomeTotal map[string]uint64  `json:"outcome_total"`
	OfferedTotal uint64             `json:"offered_total"`
	// AdmittedTotal is the gateways' levee_admitted_total summed and
	// accumulated across gateway restarts (counts after a process's last
	// scrape die with it); 0 in runs recorded before it was kept.
	AdmittedTotal float64 `json:"admitted_total,omitempty"`

	// ByPriority is keyed by priority name (P0, P1, P2).
	ByPriority map[string]PrioritySample `json:"by_priority"`

	AdmittedP50Ms float64 `json:"admitted_p50_ms"` // latency of admitted requests, last tick
	AdmittedP99Ms float64 `json:"admitted_p99_ms"`
	// AdmittedHist is the histogram behind AdmittedP50Ms/P99Ms: the
	// latencies (µs) of the admitted requests that ended in the last tick, in
	// HdrHistogram's standard V2 compressed base64 encoding ("HISTFAAA…",
	// 1 µs..10 min, 3 significant digits). Ticks merge into any interval
	// with true percentiles. Empty when none ended.
	AdmittedHist string `json:"admitted_hist,omitempty"`

	// Gateways, scraped from /metrics and summed (gauges) or maxed (lag, level)
	// over all gateway processes.
	Level             string  `json:"level"` // green, yellow, red, black
	LagProbeP99Ms     float64 `json:"lag_probe_p99_ms"`
	SchedLatencyP99Ms float64 `json:"sched_latency_p99_ms"`
	GCPauseP99Ms      float64 `json:"gc_pause_p99_ms"`
	// HeapBytes is the gateways' live heap (levee_heap_bytes) summed over
	// the gateways; HeapMaxBytes is the largest gateway's, what a
	// gateway's overload guard and its pod memory limit see. Runs recorded
	// before it was kept have none (0); see GatewayHeap.
	HeapBytes    float64 `json:"heap_bytes"`
	HeapMaxBytes float64 `json:"heap_max_bytes,omitempty"`
	// RSSBytes is the gateways' VmRSS (read by the lab from /proc) summed
	// over the gateways, like the other gauges here. A pod memory limit
	// is per gateway: compare it with RSSMaxBytes (GatewayRSS), never
	// with this sum.
	RSSBytes float64 `json:"rss_bytes"`
	// RSSMaxBytes is the largest VmRSS any one gateway reached in the
	// tick (the lab reads it every 100 ms; the reading that OOM-killed a
	// gateway included): what the per-gateway memory limit applies to.
	// Runs recorded before it was kept have none (0); see GatewayRSS.
	// Before 2026-12-08 it was the last reading at the tick, which missed
	// a killed gateway's peak.
	RSSMaxBytes       float64            `json:"rss_max_bytes,omitempty"`
	Goroutines        float64            `json:"goroutines"`
	Inflight          float64            `json:"inflight"`          // gateway in-flight, all classes
	QueueDepth        float64            `json:"queue_depth"`       // gateway wait queues, all classes
	ConcurrencyLimit  float64            `json:"concurrency_limit"` // ai class limit (sum over gateways)
	TokensInflight    float64            `json:"tokens_inflight"`
	ShedRPSByReason   map[string]float64 `json:"shed_rps_by_reason"`   // reason: ratelimit, overload, …
	ShedRPSByPriority map[string]float64 `json:"shed_rps_by_priority"` // P0, P1, P2
	// RetryRPS and HedgeRPS are the upstream retries and hedged attempts
	// the gateways sent per second (levee_retries_total and
	// levee_upstream_hedges_total, result "sent"), summed over gateways.
	RetryRPS float64 `json:"retry_rps"`
	HedgeRPS float64 `json:"hedge_rps"`
	// RedisFallbackRPS is the rate limit decisions per second made without
	// the shared store (levee_ratelimit_store_fallback_total), summed over
	// gateways; 0 when Redis is not in play.
	RedisFallbackRPS float64 `json:"redis_fallback_rps,omitempty"`
	OOMKills         int     `json:"oom_kills"` // cumulative
	GatewayStale     bool    `json:"gateway_stale,omitempty"`
	// NonFiniteTotal counts the NaN, ±Inf and beyond-±1e300 values
	// (scrape.DropNonFinite) the lab's scrapes of
	// every child's /metrics held since the lab started: each was treated
	// as missing for its one series (a gauge left out, a counter kept at
	// its previous value) and the rest of the sample kept. The first of
	// each child is reported on the error log. 0 (absent) when none.
	NonFiniteTotal uint64 `json:"nonfinite_values_total,omitempty"`

	// Agent is the agent tasks' view; nil when no agent task was offered.
	Agent *AgentSample `json:"agent,omitempty"`

	Nodes    []NodeSample    `json:"nodes"`
	Defenses map[string]bool `json:"defenses"` // ratelimit, guard, bulkhead, budget, breaker, retry, fallback
	Faults   []ActiveFault   `json:"faults,omitempty"`

	// UpstreamAttemptsTotal is the gateways' levee_upstream_attempts_total
	// summed as scraped (first tries, retries and hedges sent to nodes).
	UpstreamAttemptsTotal float64 `json:"upstream_attempts_total"`

	Recording bool   `json:"recording"`
	Lesson    string `json:"lesson,omitempty"` // narration showing now, if an experiment plays
}

// GatewayRSS is the largest gateway's VmRSS at the tick (RSSMaxBytes).
// A sample recorded before RSSMaxBytes was kept has only the sum, which is
// the one gateway's RSS when the run had one gateway: GatewayRSS returns
// RSSBytes then, and a caller that knows the run had several must not
// read it as one gateway's (see PerGatewayRSS). In a newer sample
// RSSMaxBytes is 0 only when every gateway's RSS is 0, and so is the sum.
func (s *Sample) GatewayRSS() float64 {
	if s.RSSMaxBytes > 0 {
		return s.RSSMaxBytes
	}
	return s.RSSBytes
}

// GatewayHeap is the largest gateway's live heap at the tick
// (HeapMaxBytes); for a sample recorded before it was kept, the sum
// HeapBytes, which is the one gateway's when the run had one (see
// PerGatewayHeap), as GatewayRSS.
func (s *Sample) GatewayHeap() float64 {
	if s.HeapMaxBytes > 0 {
		return s.HeapMaxBytes
	}
	return s.HeapBytes
}

// PerGatewayHeap reports whether samples (one run's) carry the largest
// gateway's heap, HeapMaxBytes; false for a run recorded before it was
// kept (or one no gateway's heap was ever scraped in).
func PerGatewayHeap(samples []Sample) bool {
	for i := range samples {
		if samples[i].HeapMaxBytes > 0 {
			return true
		}
	}
	return false
}

// PerGatewayRSS reports whether samples (one run's) carry the largest
// gateway's RSS, RSSMaxBytes; false for a run recorded before it was
// kept (or one whose gateways never had an RSS).
func PerGatewayRSS(samples []Sample) bool {
	for i := range samples {
		if samples[i].RSSMaxBytes > 0 {
			return true
		}
	}
	return false
}

// PrioritySample is the client-side view of one priority class.
type PrioritySample struct {
	OfferedTotal  uint64 `json:"offered_total"`
	OKTotal       uint64 `json:"ok_total"`
	FinishedTotal uint64 `json:"finished_total"` // any outcome, generator_dropped included
	// PassedRateLimitTotal is the finished requests the rate limit let
	// through (every outcome but shed_ratelimit and generator_dropped).
	PassedRateLimitTotal uint64 `json:"passed_ratelimit_total,omitempty"`
	// ReferencePassedTotal is the finished requests of the same ones that
	// one exact limiter with the rule, run by the generator on their
	// arrivals, let through (load.Config.Reference); absent when the run
	// had none (runs recorded before it, or no single rule).
	ReferencePassedTotal uint64  `json:"reference_passed_total,omitempty"`
	SuccessRate          float64 `json:"success_rate"` // ok / finished, over the last few seconds; 1 when nothing finished
	// SuccessFinished is the finished requests SuccessRate is taken over
	// (its denominator). 0: nothing finished in those seconds, and
	// SuccessRate's 1 is a convention, not a measurement (a stall, or
	// no traffic of the class); the dashboard shows "—" then. Runs
	// recorded before it have no such field.
	SuccessFinished uint64  `json:"success_finished,omitempty"`
	P50Ms           float64 `json:"p50_ms"`
	P99Ms           float64 `json:"p99_ms"`
	// Hist is the histogram behind P50Ms/P99Ms (every sent request of the
	// class that ended in the last tick), encoded like Sample.AdmittedHist.
	Hist string `json:"hist,omitempty"`
}

// NodeSample is one fake model node.
type NodeSample struct {
	Index     int     `json:"index"`
	Addr      string  `json:"addr"`
	Up        bool    `json:"up"`
	Busy      float64 `json:"busy"`  // in service
	Slots     float64 `json:"slots"` // configured slots
	Queued    float64 `json:"queued"`
	RestartIn float64 `json:"restart_in_s,omitempty"` // seconds until a killed node returns
	// Ejection is the gateways' outlier state of the node (in_rotation,
	// probing, ejected): the most severe any gateway with a current scrape
	// reports; "" when none does.
	Ejection string `json:"ejection,omitempty"`
}

// ActiveFault is a fault that is applied right now.
type ActiveFault struct {
	Name   string `json:"name"`
	Detail string `json:"detail"` // short human text, e.g. "×3", "#2 for 10s"
}
