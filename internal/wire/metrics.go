package wire

// Gateway metric names (Prometheus conventions: levee_ prefix, base units,
// counters end in _total). Quantiles over the guard's recent window are
// plain gauges named by their quantile: they are not cumulative summaries.
const (
	MetricRequests         = "levee_requests_total"     // counter: route, priority, outcome
	MetricShed             = "levee_shed_total"         // counter: reason, priority
	MetricAdmitted         = "levee_admitted_total"     // counter: class, priority
	MetricInflight         = "levee_inflight"           // gauge: class
	MetricQueueDepth       = "levee_queue_depth"        // gauge: class, priority
	MetricQueueWait        = "levee_queue_wait_seconds" // histogram: class
	MetricConcurrencyLimit = "levee_concurrency_limit"  // gauge: class
	MetricOverloadLevel    = "levee_overload_level"     // gauge: index of Levels()
	MetricShedLevel        = "levee_shed_level"         // gauge: the guard's proportional shed level
	MetricShedShare        = "levee_shed_share"         // gauge: priority
	MetricLevelChanges     = "levee_overload_level_changes_total"
	MetricLagProbeP50      = "levee_lag_probe_p50_seconds"
	MetricLagProbeP99      = "levee_lag_probe_p99_seconds"
	MetricSchedLatencyP99  = "levee_sched_latency_p99_seconds"
	MetricGCPauseP99       = "levee_gc_pause_p99_seconds"
	MetricHeap             = "levee_heap_bytes"
	MetricTokensInflight   = "levee_tokens_inflight"
	MetricTokenBudget      = "levee_token_budget"
	MetricDefenseEnabled   = "levee_defense_enabled" // gauge: defense
	MetricSubcallsInflight = "levee_agent_subcalls_inflight"
	MetricSubcalls         = "levee_agent_subcalls_total" // counter: result
	MetricFallbacks        = "levee_fallbacks_total"      // counter: route, reason
	MetricSubcallsQueued   = "levee_agent_subcalls_queued"
	MetricAgentTasks       = "levee_agent_tasks_total"     // counter: result, level
	MetricAgentLevel       = "levee_agent_level"           // gauge: index of Levels()
	MetricTokensReserved   = "levee_tokens_reserved_total" // counter: priority
	MetricTokensUsed       = "levee_tokens_used_total"     // counter: priority
	MetricStreamTTFT       = "levee_stream_ttft_seconds"   // histogram

	MetricUpstreamUp               = "levee_upstream_up"                       // gauge: node
	MetricUpstreamBreakerState     = "levee_upstream_breaker_state"            // gauge: node
	MetricUpstreamEjectionState    = "levee_upstream_ejection_state"           // gauge: node
	MetricUpstreamInflight         = "levee_upstream_inflight"                 // gauge: node
	MetricUpstreamLatency          = "levee_upstream_latency_seconds"          // histogram
	MetricUpstreamAttemptTimeout   = "levee_upstream_attempt_timeout_seconds"  // gauge: node, call_class
	MetricUpstreamHedgeDelay       = "levee_upstream_hedge_delay_seconds"      // gauge: node, call_class
	MetricUpstreamBackpressure     = "levee_upstream_backpressure"             // gauge: node
	MetricRetries                  = "levee_retries_total"                     // counter: priority, result
	MetricUpstreamAttempts         = "levee_upstream_attempts_total"           // counter: kind
	MetricUpstreamAttemptFailures  = "levee_upstream_attempt_failures_total"   // counter: node, reason
	MetricUpstreamStaleConnRetries = "levee_upstream_stale_conn_retries_total" // counter
	MetricUpstreamAttemptPanics    = "levee_upstream_attempt_panics_total"     // counter
	MetricUpstreamTimerPanics      = "levee_upstream_timer_panics_total"       // counter
	MetricUpstreamHedges           = "levee_upstream_hedges_total"             // counter: result
	MetricUpstreamEjections        = "levee_upstream_ejections_total"          // counter: node, reason
	MetricRateLimitStoreFallback   = "levee_ratelimit_store_fallback_total"    // counter: store
)

// Fake model metric names. A process serving several nodes labels every
// series with LabelNode.
const (
	MetricFakeRequests    = "levee_fakemodel_requests_total" // counter: outcome (FakeOutcome…)
	MetricFakeInService   = "levee_fakemodel_in_service"
	MetricFakeQueued      = "levee_fakemodel_queued"
	MetricFakeSlots       = "levee_fakemodel_slots"
	MetricFakeService     = "levee_fakemodel_service_seconds" // histogram
	MetricFakeMeanService = "levee_fakemodel_mean_service_seconds"
	MetricFakeWasted      = "levee_fakemodel_wasted_seconds_total"
	MetricFakeBallast     = "levee_fakemodel_ballast_bytes"
	MetricFakeChurned     = "levee_fakemodel_churned_bytes_total"
)

// Metrics of the standard Go and process collectors the lab reads.
const (
	MetricGoGoroutines = "go_goroutines"
	MetricProcessRSS   = "process_resident_memory_bytes"
	MetricProcessStart = "process_start_time_seconds" // gauge: Unix seconds
)

// Suffixes of a histogram's series in the text format.
const (
	SuffixSum    = "_sum"
	SuffixCount  = "_count"
	SuffixBucket = "_bucket"
)

// Label names.
const (
	LabelRoute    = "route"    // Routes()
	LabelPriority = "priority" // Priorities()
	LabelOutcome  = "outcome"  // Outcome names; fake model: FakeOutcome…
	LabelReason   = "reason"   // ShedReason names; fallbacks: FallbackReason…
	LabelClass    = "class"    // Classes()
	LabelNode     = "node"     // a model node's address
	LabelDefense  = "defense"  // DefenseNames()
	LabelResult   = "result"   // retries: Retry…; hedges: Hedge…; agent sub-calls: Subcall…
	LabelStore    = "store"    // StoreLocal, StoreRedis
	LabelLevel    = "level"    // Levels()
	LabelKind     = "kind"     // upstream attempts: Attempt…
	// LabelCallClass groups upstream calls of like latency: CallClasses().
	LabelCallClass = "call_class"
)

// Fallback reasons: the LabelReason values of MetricFallbacks.
const (
	FallbackBlack    = "black"    // overload level black
	FallbackUpstream = "upstream" // no node, breaker open, connection failure, 5xx
	FallbackRules    = "rules"    // agent at red: answered by rules, no model
)

// Retry results: the LabelResult values of MetricRetries.
const (
	RetrySent   = "sent"
	RetryDenied = "denied" // by the retry budget
)

// Hedge results: the LabelResult values of MetricUpstreamHedges.
const (
	HedgeSent   = "sent"
	HedgeWon    = "won"    // the hedge answered first
	HedgeDenied = "denied" // by the hedge budget
)

// Upstream attempt kinds: the LabelKind values of MetricUpstreamAttempts.
const (
	AttemptFirst = "first"
	AttemptRetry = "retry"
	AttemptHedge = "hedge"
)

// Upstream attempt failures: the LabelReason values of
// MetricUpstreamAttemptFailures and the gateway's upstream.retry_on values.
const (
	AttemptFailConnect = "connect" // dial refused, reset, EOF before the first byte
	AttemptFailStatus  = "5xx"     // the node answered a 5xx status
	AttemptFailTimeout = "timeout" // abandoned by the per-attempt timeout
)

// Outlier ejection states: a node's "ejection" in the gateway's state, in
// the order of their MetricUpstreamEjectionState values (0, 1, 2).
const (
	EjectionInRotation = "in_rotation"
	EjectionProbing    = "probing"
	EjectionEjected    = "ejected"
)

// EjectionStates returns the ejection states in the order of their
// MetricUpstreamEjectionState values.
func EjectionStates() [3]string {
	return [3]string{EjectionInRotation, EjectionProbing, EjectionEjected}
}

// Ejection reasons: the LabelReason values of MetricUpstreamEjections.
const (
	EjectConsecutiveFailures = "consecutive_failures"
	EjectFailureRate         = "failure_rate"
	EjectLatency             = "latency"
	EjectProbeFailed         = "probe_failed" // a probe failed while probing back
)

// Upstream call classes: the LabelCallClass values. The gateway sends each
// model call as one class; the pool keeps latencies per node and class.
const (
	CallPredict      = "predict"           // PathPredict
	CallChat         = "chat"              // PathChat, not streamed
	CallChatStream   = "chat_stream"       // PathChat streamed: time to first token
	CallAgentSubcall = "agent_subcall"     // one sub-call of PathAgent
	CallCompletion   = "completion"        // PathCompletions, not streamed
	CallCompletionSt = "completion_stream" // PathCompletions streamed: time to first token
	CallEmbeddings   = "embeddings"        // PathEmbeddings
	CallDefault      = "default"           // a call that names no class
	CallOther        = "other"             // classes past the pool's per-node cap share this one
)

// CallClasses returns the upstream call classes.
func CallClasses() [9]string {
	return [9]string{CallPredict, CallChat, CallChatStream, CallAgentSubcall, CallCompletion, CallCompletionSt, CallEmbeddings, CallDefault, CallOther}
}

// Agent sub-call results: the LabelResult values of MetricSubcalls.
const (
	SubcallOK      = "ok"
	SubcallError   = "error"
	SubcallTimeout = "timeout"
	SubcallCapped  = "capped"  // not sent: amplification cap
	SubcallSkipped = "skipped" // not sent: degraded depth
)

// SubcallResults returns the agent sub-call results.
func SubcallResults() [5]string {
	return [5]string{SubcallOK, SubcallError, SubcallTimeout, SubcallCapped, SubcallSkipped}
}

// Agent task results: the LabelResult values of MetricAgentTasks. A task
// is one POST /v1/agent the gateway parsed; it succeeded when its path,
// degraded or not, answered within its deadline (AgentTaskSucceeded).
const (
	AgentTaskOK       = "ok"       // every step asked for, at full fan-out
	AgentTaskDegraded = "degraded" // answered with fewer steps or sub-calls than asked
	AgentTaskFallback = "fallback" // answered by the rules, no model (black, or every sub-call failed)
	AgentTaskDropped  = "dropped"  // refused at red: the share of complex tasks dropped
	AgentTaskShed     = "shed"     // refused by admission: rate limit, guard, queue, budget, fan-out cap
	AgentTaskTimeout  = "timeout"  // no answer within the deadline
	AgentTaskError    = "error"    // the model failed and no fallback answered
)

// AgentTaskResults returns the agent task results.
func AgentTaskResults() [7]string {
	return [7]string{AgentTaskOK, AgentTaskDegraded, AgentTaskFallback, AgentTaskDropped, AgentTaskShed, AgentTaskTimeout, AgentTaskError}
}

// AgentTaskSucceeded reports whether a task with result r answered in time.
func AgentTaskSucceeded(r string) bool {
	return r == AgentTaskOK || r == AgentTaskDegraded || r == AgentTaskFallback
}

// Breaker states: a node's "breaker" in the gateway's state, in the order of
// their MetricUpstreamBreakerState values (0, 1, 2).
const (
	BreakerClosed   = "closed"
	BreakerHalfOpen = "half_open"
	BreakerOpen     = "open"
)

// Fake model request outcomes: the LabelOutcome values of MetricFakeRequests.
const (
	FakeOutcomeOK         = "ok"          // answered 200
	FakeOutcomeError      = "error"       // injected 500
	FakeOutcomeHang       = "hang"        // never answered; the client gave up
	FakeOutcomeRejected   = "rejected"    // 429: no slot and the overflow policy refused to wait
	FakeOutcomeAborted    = "aborted"     // the client left before the answer was delivered
	FakeOutcomeBadRequest = "bad_request" // 4xx: malformed request
)

// FakeOutcomes returns the fake model's request outcomes.
func FakeOutcomes() [6]string {
	return [6]string{FakeOutcomeOK, FakeOutcomeError, FakeOutcomeHang, FakeOutcomeRejected, FakeOutcomeAborted, FakeOutcomeBadRequest}
}

// Metric types, as the text format spells them.
const (
	TypeCounter   = "counter"
	TypeGauge     = "gauge"
	TypeHistogram = "histogram"
)

// Metric describes one metric family of the contract.
type Metric struct {
	Name   string
	Type   string   // TypeCounter, TypeGauge or TypeHistogram
	Labels []string // label names (the docs list them in this order)
	// Doc explains the value and its labels' values (one line, Markdown).
	Doc string
}

// GatewayMetrics returns the metrics every gateway exposes on PathMetrics
// (besides the standard Go and process collectors), in display order.
func GatewayMetrics() []Metric {
	return []Metric{
		{MetricRequests, TypeCounter, []string{LabelRoute, LabelPriority, LabelOutcome}, "traffic requests; every request counted once (outcomes above, never `generator_dropped`)"},
		{MetricShed, TypeCounter, []string{LabelReason, LabelPriority}, "requests shed by the defense chain; `reason` is a shed reason"},
		{MetricAdmitted, TypeCounter, []string{LabelClass, LabelPriority}, "requests admitted by the defense chain (a slot and its token budget granted), counted when admitted"},
		{MetricInflight, TypeGauge, []string{LabelClass}, "requests holding a bulkhead place: admitted and not done with the model (a non-streamed answer gives its place back once read whole from the model, before it is written to the client)"},
		{MetricQueueDepth, TypeGauge, []string{LabelClass, LabelPriority}, "requests waiting in a bulkhead queue"},
		{MetricQueueWait, TypeHistogram, []string{LabelClass}, "time from reaching a bulkhead to leaving it, one sample per pass: 0 for a place granted at once, about 0 for a refusal at a full queue, else the queue wait (granted, timed out or deadline passed); a call every node refused (429) that waits again for a place is another pass"},
		{MetricConcurrencyLimit, TypeGauge, []string{LabelClass}, "current bulkhead concurrency limit"},
		{MetricOverloadLevel, TypeGauge, nil, "overload level: 0 green, 1 yellow, 2 red, 3 black"},
		{MetricShedLevel, TypeGauge, nil, "the overload guard's shed level: 0 admits all, 0–1 sheds that share of P2, 1–2 all P2 and (level − 1) of P1, 2–3 all P2 and P1 and (level − 2) of P0"},
		{MetricShedShare, TypeGauge, []string{LabelPriority}, "share of requests of the priority the overload guard refuses now"},
		{MetricLevelChanges, TypeCounter, nil, "overload level changes (`GET /admin/state` lists the latest with their causes)"},
		{MetricLagProbeP50, TypeGauge, nil, "lag probe oversleep, median over the recent window"},
		{MetricLagProbeP99, TypeGauge, nil, "lag probe oversleep, 99th percentile over the recent window"},
		{MetricSchedLatencyP99, TypeGauge, nil, "goroutine scheduling latency (runtime/metrics), 99th percentile over the recent window"},
		{MetricGCPauseP99, TypeGauge, nil, "GC stop-the-world pauses, 99th percentile over the recent window"},
		{MetricHeap, TypeGauge, nil, "heap bytes in objects at the scrape, live or not yet freed by a GC (`/memory/classes/heap/objects:bytes`; between GCs up to about twice the live heap)"},
		{MetricTokensInflight, TypeGauge, nil, "estimated LLM tokens of requests in flight"},
		{MetricTokenBudget, TypeGauge, nil, "token budget (cap on `" + MetricTokensInflight + "`)"},
		{MetricDefenseEnabled, TypeGauge, []string{LabelDefense}, "1 when a defense is on, else 0"},
		{MetricSubcallsInflight, TypeGauge, nil, "agent sub-calls in flight (amplification)"},
		{MetricSubcalls, TypeCounter, []string{LabelResult}, "agent sub-calls: `ok`, `error`, `timeout`, `capped` (not sent: amplification cap), `skipped` (not sent: degraded depth)"},
		{MetricFallbacks, TypeCounter, []string{LabelRoute, LabelReason}, "fallback answers; `reason` is `black`, `upstream` or `rules`"},
		{MetricSubcallsQueued, TypeGauge, nil, "agent sub-calls waiting for a place under the amplification cap (sub-calls every node refused, waiting to go again, included)"},
		{MetricAgentTasks, TypeCounter, []string{LabelResult, LabelLevel}, "agent tasks by result (`ok`, `degraded`, `fallback`, `dropped`, `shed`, `timeout`, `error`; the first three answered in time) and the agent level they were planned at"},
		{MetricAgentLevel, TypeGauge, nil, "the level agent tasks are planned at: the overload level, black when `agent.black_nodes_down` of the nodes are down"},
		{MetricTokensReserved, TypeCounter, []string{LabelPriority}, "estimated tokens reserved by admitted model requests"},
		{MetricTokensUsed, TypeCounter, []string{LabelPriority}, "tokens the model reported using (answer `usage`, a stream's usage chunk or counted chunks); the estimate when it reported nothing"},
		{MetricStreamTTFT, TypeHistogram, nil, "streamed chat answers: time from sending the call to the model to the first `data:` line of its answer (SSE comments such as `: PROCESSING` or `: keep-alive` do not count); the limiter's latency signal for streams"},
		{MetricUpstreamUp, TypeGauge, []string{LabelNode}, "1 when the node passed its last health check (`node`, on every `levee_upstream_` series, is the node's base URL as the gateway calls it, `http://127.0.0.1:9001` for a node configured as `127.0.0.1:9001`; a fake model labels itself `127.0.0.1:9001`)"},
		{MetricUpstreamBreakerState, TypeGauge, []string{LabelNode}, "circuit breaker: 0 closed, 1 half-open, 2 open"},
		{MetricUpstreamEjectionState, TypeGauge, []string{LabelNode}, "outlier ejection: 0 in rotation, 1 probing, 2 ejected"},
		{MetricUpstreamInflight, TypeGauge, []string{LabelNode}, "requests outstanding on the node"},
		{MetricUpstreamLatency, TypeHistogram, nil, "time from sending an attempt to a node to the first byte of its answer (of a stream: the first byte of a line that is not an SSE comment)"},
		{MetricUpstreamAttemptTimeout, TypeGauge, []string{LabelNode, LabelCallClass}, "attempt timeout derived now from the node's latency for the call class, before the caller's deadline cuts it (0: not enough samples yet)"},
		{MetricUpstreamHedgeDelay, TypeGauge, []string{LabelNode, LabelCallClass}, "delay after which a P0 attempt on the node is hedged, for the call class (0: not enough samples yet)"},
		{MetricUpstreamBackpressure, TypeGauge, []string{LabelNode}, "1 while the node's backpressure signal counts (its last answer within `guard.backpressure_ttl` carried it)"},
		{MetricRetries, TypeCounter, []string{LabelPriority, LabelResult}, "retries of failed attempts, and calls every node refused (429) sent again with nothing in flight to wait for (a wait for a place a call in flight frees is free), by the call's priority: `sent`, or `denied` by the retry budget"},
		{MetricUpstreamAttempts, TypeCounter, []string{LabelKind}, "attempts sent to model nodes: `first`, `retry`, `hedge`"},
		{MetricUpstreamStaleConnRetries, TypeCounter, nil, "calls sent again, once, on a new connection after the kept-alive one they were written on turned out closed by the node (EOF or reset before any answer byte, `http: server closed idle connection`); not a failure of the node (`upstream.idle_conn_timeout`)"},
		{MetricUpstreamAttemptPanics, TypeCounter, nil, "attempts whose goroutine panicked (a bug, logged with its stack): the attempt failed, not retried, and not counted against its node"},
		{MetricUpstreamTimerPanics, TypeCounter, nil, "attempt-timeout and hedge timer callbacks that panicked (a bug, logged with its stack and the timer's name): the attempt runs on as if nothing could replace it, the call is not hedged; no node is blamed"},
		{MetricUpstreamAttemptFailures, TypeCounter, []string{LabelNode, LabelReason}, "failed attempts: `connect`, `5xx`, `timeout` (abandoned by the attempt timeout)"},
		{MetricUpstreamHedges, TypeCounter, []string{LabelResult}, "hedged attempts: `sent`, `won` (answered first), `denied` by the hedge budget"},
		{MetricUpstreamEjections, TypeCounter, []string{LabelNode, LabelReason}, "outlier ejections: `consecutive_failures`, `failure_rate`, `latency`, `probe_failed`"},
	}
}

// GatewayRedisMetrics returns the metrics a gateway with a Redis
// rate-limit store adds.
func GatewayRedisMetrics() []Metric {
	return []Metric{
		{MetricRateLimitStoreFallback, TypeCounter, []string{LabelStore}, "Redis store only: rate-limit decisions made without the shared store (it failed, timed out or its breaker was open)"},
	}
}

// FakeModelMetrics returns the metrics every fake model node exposes on
// PathMetrics (besides the standard Go and process collectors).
func FakeModelMetrics() []Metric {
	return []Metric{
		{MetricFakeRequests, TypeCounter, []string{LabelNode, LabelOutcome}, "model-route requests by how they ended: `ok` (200), `error` (the injected 500), `hang` (held until the client gave up, or answered 503 at shutdown), `rejected` (429: no slot under the overflow policy; 503: the node closed while it waited), `aborted` (its client left first), `bad_request` (400, 405 or 413)"},
		{MetricFakeInService, TypeGauge, []string{LabelNode}, "requests holding a slot"},
		{MetricFakeQueued, TypeGauge, []string{LabelNode}, "requests waiting for a slot"},
		{MetricFakeSlots, TypeGauge, []string{LabelNode}, "configured slots"},
		{MetricFakeService, TypeHistogram, []string{LabelNode}, "time a request held its slot (queue wait excluded)"},
		{MetricFakeMeanService, TypeGauge, []string{LabelNode}, "configured mean service time of a non-stream request (capacity = slots / mean)"},
		{MetricFakeWasted, TypeCounter, []string{LabelNode}, "service time spent on requests whose client had left"},
		{MetricFakeBallast, TypeGauge, []string{LabelNode}, "retained ballast of the pressure knobs"},
		{MetricFakeChurned, TypeCounter, []string{LabelNode}, "garbage allocated by the churn knob"},
	}
}
