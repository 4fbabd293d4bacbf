package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Outcome is how one traffic request ended (docs/CONTRACTS.md). Every
// request of a traffic route ends in exactly one Outcome, which the gateway
// sends as the X-Levee-Outcome header and counts once in
// levee_requests_total.
type Outcome uint8

// The outcomes, in report order.
const (
	OutcomeOK Outcome = iota
	OutcomeFallback
	OutcomeShedRateLimit
	OutcomeShedOverload
	OutcomeShedQueueFull
	OutcomeShedQueueTimeout
	OutcomeShedBudget
	OutcomeTimeout
	OutcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	"ok", "fallback", "shed_ratelimit", "shed_overload", "shed_queue_full",
	"shed_queue_timeout", "shed_budget", "timeout", "error",
}

// String returns the contract's name of o ("ok", "shed_queue_full", …).
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "error"
}

// ShedReason returns the levee_shed_total reason of a shed outcome and
// whether o is a shed at all.
func (o Outcome) ShedReason() (ShedReason, bool) {
	switch o {
	case OutcomeShedRateLimit:
		return ShedRateLimit, true
	case OutcomeShedOverload:
		return ShedOverload, true
	case OutcomeShedQueueFull:
		return ShedQueueFull, true
	case OutcomeShedQueueTimeout:
		return ShedQueueTimeout, true
	case OutcomeShedBudget:
		return ShedBudget, true
	}
	return 0, false
}

// ShedReason is the reason label of levee_shed_total.
type ShedReason uint8

// The shed reasons.
const (
	ShedRateLimit ShedReason = iota
	ShedOverload
	ShedQueueFull
	ShedQueueTimeout
	ShedBudget
	numShedReasons
)

var shedNames = [numShedReasons]string{"ratelimit", "overload", "queue_full", "queue_timeout", "budget"}

func (r ShedReason) String() string { return shedNames[r] }

// Header names the gateway sets on traffic responses.
const (
	HeaderOutcome      = "X-Levee-Outcome"
	HeaderFallback     = "X-Levee-Fallback"
	HeaderDeadline     = "X-Levee-Deadline-Ms"
	HeaderDeadlineAlt  = "X-Request-Timeout-Ms"
	HeaderFinalOutcome = "X-Levee-Outcome-Final" // trailer of streamed responses
)

// errorBody is the contract's JSON error shape.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// writeError writes a JSON error with status and, when o is a traffic
// outcome (not for admin errors), its X-Levee-Outcome header.
func writeError(w http.ResponseWriter, status int, o Outcome, traffic bool, field, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	d := errorDetail{Message: msg, Field: field}
	if traffic {
		h.Set(HeaderOutcome, o.String())
		d.Outcome = o.String()
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: d})
}

// writeShed answers a shed request: 429 for ratelimit and yellow overload
// (with Retry-After, seconds ≥ 1), 503 otherwise.
func writeShed(w http.ResponseWriter, o Outcome, status int, retryAfter int, msg string) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	writeError(w, status, o, true, "", msg)
}

// writeJSON writes v as a JSON 200 answer with outcome o.
func writeJSON(w http.ResponseWriter, o Outcome, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(HeaderOutcome, o.String())
	if o == OutcomeFallback {
		h.Set(HeaderFallback, "true")
	}
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}
