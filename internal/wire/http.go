package wire

import (
	"fmt"
	"strings"
)

// Headers of traffic requests and answers.
const (
	// HeaderOutcome is the gateway's Outcome of a traffic answer. A stream
	// sends "ok" here before it begins and its final outcome in
	// HeaderOutcomeFinal.
	HeaderOutcome = "X-Levee-Outcome"
	// HeaderOutcomeFinal is the trailer of a streamed answer: its outcome
	// once the stream has ended; it overrides HeaderOutcome.
	HeaderOutcomeFinal = "X-Levee-Outcome-Final"
	// HeaderFallback is "true" on a fallback answer.
	HeaderFallback = "X-Levee-Fallback"
	// HeaderDeadlineMs is the client's remaining deadline in whole
	// milliseconds; the gateway passes what remains of it upstream.
	HeaderDeadlineMs = "X-Levee-Deadline-Ms"
	// HeaderRequestTimeoutMs is an alias of HeaderDeadlineMs the gateway
	// also honours (grpc-timeout style).
	HeaderRequestTimeoutMs = "X-Request-Timeout-Ms"
	// HeaderNode names the fake model node that answered (its address).
	HeaderNode = "X-Levee-Node"
	// HeaderAttempt is the load generator's attempt number of a request,
	// 1 for the first; a retry sends 2, 3, … (Envoy's
	// x-envoy-attempt-count). Servers may count retries by it.
	HeaderAttempt = "X-Levee-Attempt"
	// HeaderBackpressure is a model node's backpressure signal (seed 004):
	// present on its answers while the node is past one of its watermarks,
	// its value the comma-separated reasons (Backpressure…). The gateway's
	// guard counts the nodes that sent it recently.
	HeaderBackpressure = "X-Levee-Backpressure"
)

// Backpressure reasons, the values of HeaderBackpressure.
const (
	BackpressureQueue = "queue" // requests waiting for a slot ≥ backpressure_queue
	BackpressureHeap  = "heap"  // live heap ≥ backpressure_heap_mb
	BackpressureCPU   = "cpu"   // process CPU share ≥ backpressure_cpu
	BackpressureForce = "force" // backpressure_force is on
)

// FieldFallback is the JSON field a fallback answer's body sets to true
// ({"fallback":true}).
const FieldFallback = "fallback"

// Traffic paths of the gateway (G) and the fake model nodes (F).
const (
	PathChat    = "/v1/chat/completions" // G, F: POST, OpenAI chat body
	PathPredict = "/v1/predict"          // G, F: POST {"features":{…}}
	// PathCompletions is OpenAI's legacy text completion route: POST
	// {"prompt":…,"max_tokens":N}, streamed or not.
	PathCompletions = "/v1/completions" // G, F
	// PathEmbeddings is OpenAI's embeddings route: POST {"input":…}.
	PathEmbeddings = "/v1/embeddings" // G, F
	PathAgent      = "/v1/agent"      // G: POST {"prompt":…,"max_tokens":N}
	PathExport     = "/v1/export"     // G: GET ?rows=N, NDJSON
	PathStandard   = "/v1/standard/"  // G: GET /v1/standard/…, served locally
	PathModels     = "/v1/models"     // G: GET, a node's list relayed (route "other"); F: GET, OpenAI model list
	PathV1         = "/v1/"           // G: any other /v1/ path (route "other")
	PathMetrics    = "/metrics"       // G, F: Prometheus text format
	PathHealthz    = "/healthz"       // G, F: 200 while the process lives
	// PathHealth is vLLM's liveness route: a fake model node answers it
	// as PathHealthz, so probes and a gateway's health_path written for
	// vLLM work against the fake model unchanged.
	PathHealth = "/health" // F
	PathReadyz = "/readyz" // G, F: 200 when it can serve, 503 while draining
)

// QueryExportRows is the query parameter of PathExport naming the rows.
const QueryExportRows = "rows"

// Admin paths of the gateway's admin listener (G) and of every fake model
// node (F, on its traffic port).
const (
	PathAdmin         = "/admin/"         // G, F: prefix of every admin route
	PathAdminState    = "/admin/state"    // G: GET → state
	PathAdminDefenses = "/admin/defenses" // G: PUT partial Defenses
	PathAdminLimits   = "/admin/limits"   // G: PUT partial limits
	PathAdminPressure = "/admin/pressure" // G: PUT PressurePatch
	PathAdminLevel    = "/admin/level"    // G: PUT {"level":"black"} pins the level, "" unpins
	PathAdminKnobs    = "/admin/knobs"    // F: GET knobs, PUT (or PATCH) KnobPatch
)

// Admin token: every admin request carries "Authorization: Bearer TOKEN".
const (
	// EnvAdminToken is the environment variable a server takes its admin
	// token from when --admin-token is not given.
	EnvAdminToken = "LEVEE_ADMIN_TOKEN"
	// AdminTokenLine prefixes the stderr line of a server that generated
	// its own token ("admin token: TOKEN").
	AdminTokenLine = "admin token: "
	// MinAdminTokenLen is the shortest admin token a server accepts (a
	// generated one is 32 hex characters).
	MinAdminTokenLen = 16
)

// ErrorBody is the JSON error every server answers with:
// {"error":{"message":"…","type":"…","code":"…","param":"…","field":"…","outcome":"…"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of ErrorBody. Param and Type are OpenAI's
// names (its error object), so OpenAI clients show the field and kind.
type ErrorDetail struct {
	Message string `json:"message"`
	// Field names the JSON field or knob to blame, when there is one.
	Field string `json:"field,omitempty"`
	// Outcome is the traffic answer's outcome (gateway traffic routes only).
	Outcome string `json:"outcome,omitempty"`
	// Param is Field again, under OpenAI's name.
	Param string `json:"param,omitempty"`
	// Type is OpenAI's error type for the status (ErrorType).
	Type string `json:"type,omitempty"`
	// Code is the machine-readable cause (one of the Code constants), as
	// in OpenAI's error object: stable, unlike Message, so a client can
	// branch on it. Empty on a server that does not set it.
	Code string `json:"code,omitempty"`
}

// Error codes (ErrorDetail.Code): one per cause of an error answer. A
// client may branch on them; the message says the same for people. The
// ones OpenAI also uses (rate_limit_exceeded, invalid_api_key,
// unknown_url) mean what they mean there.
const (
	CodeRateLimitExceeded = "rate_limit_exceeded"          // 429: the key's rate-limit rule has no token now
	CodeRateLimitStore    = "rate_limit_store_unavailable" // 429: the shared rate-limit store is down and fail_open is off
	CodeOverloaded        = "overloaded"                   // 429 (P2 at yellow) or 503: the guard's overload level sheds this priority
	CodeQueueFull         = "queue_full"                   // 503: the class's bulkhead queue is full
	CodeQueueTimeout      = "queue_timeout"                // 503: queued for the class's queue_timeout without a slot
	CodeBudgetExhausted   = "token_budget_exhausted"       // 503: the in-flight token budget (or agent sub-call cap) has no room now
	CodeDeadlineExceeded  = "deadline_exceeded"            // 504: the request's deadline passed (queued, upstream, reading the body)
	CodeInvalidRequest    = "invalid_request"              // 400: a bad field, header or body
	CodeCostExceedsLimit  = "cost_exceeds_limit"           // 400: the request's estimated tokens can never pass (cap, reserves, bucket capacity)
	CodeRequestTooLarge   = "request_too_large"            // 413: the body is over the limit
	CodeInvalidAPIKey     = "invalid_api_key"              // 401: missing or unknown API key (or admin token)
	CodePermissionDenied  = "permission_denied"            // 403: the caller may not use this API from where it is (a fake model's admin API from a non-loopback peer)
	CodeUnknownURL        = "unknown_url"                  // 404: no such route
	CodeMethodNotAllowed  = "method_not_allowed"           // 405: the route takes another method
	CodeUpstreamError     = "upstream_error"               // 502: the model failed, could not be reached, or answered badly
	CodeUnavailable       = "unavailable"                  // 503 outside the sheds above (an admin change that cannot apply now)
	CodeInternalError     = "internal_error"               // 500: a bug in the server (a recovered panic)
)

// ErrorCode is the default Code of an error answer with status and, for a
// gateway traffic answer, outcome o (ok is passed for others): the shed
// outcomes map to their cause, the rest to their status. A cause that
// shares a status and outcome with another (a cost that can never pass, a
// fail-closed store) is set by its writer instead.
func ErrorCode(status int, o Outcome) string {
	switch o {
	case OutcomeShedRateLimit:
		return CodeRateLimitExceeded
	case OutcomeShedOverload:
		return CodeOverloaded
	case OutcomeShedQueueFull:
		return CodeQueueFull
	case OutcomeShedQueueTimeout:
		return CodeQueueTimeout
	case OutcomeShedBudget:
		return CodeBudgetExhausted
	case OutcomeTimeout:
		return CodeDeadlineExceeded
	}
	switch status {
	case 401:
		return CodeInvalidAPIKey
	case 403:
		return CodePermissionDenied
	case 404:
		return CodeUnknownURL
	case 405:
		return CodeMethodNotAllowed
	case 413:
		return CodeRequestTooLarge
	case 429:
		return CodeRateLimitExceeded
	case 500:
		return CodeInternalError
	case 502:
		return CodeUpstreamError
	case 503:
		return CodeUnavailable
	case 504:
		return CodeDeadlineExceeded
	}
	if status >= 500 {
		return CodeInternalError
	}
	return CodeInvalidRequest
}

// NewErrorDetail is the error of an answer with status: msg, the field to
// blame (may be empty) as Field and Param, and the status's Type.
func NewErrorDetail(status int, field, msg string) ErrorDetail {
	return ErrorDetail{Message: msg, Field: field, Param: field, Type: ErrorType(status)}
}

// ErrorType is OpenAI's error type for an HTTP status.
func ErrorType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// KeyProblem says why an API key (or admin token) can never match an
// "Authorization: Bearer KEY" header ("" when it can): net/http trims a
// header value's leading and trailing whitespace (a server never sees
// it), and refuses to send a header value holding a control character
// other than a tab.
func KeyProblem(key string) string {
	if strings.TrimSpace(key) != key {
		return "leading or trailing whitespace"
	}
	for _, r := range key {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return fmt.Sprintf("control character %U", r)
		}
	}
	return ""
}
