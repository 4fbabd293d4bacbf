package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/levee-lab/levee/internal/wire"
)

// Every request of a traffic route ends in exactly one wire.Outcome (one
// of the first wire.NumServerOutcomes), which the gateway sends as the
// X-Levee-Outcome header and counts once in levee_requests_total.

// shed describes why admission refused a request.
type shed struct {
	outcome    wire.Outcome
	status     int
	retryAfter int    // Retry-After, seconds ≥ 1 (0: none)
	black      bool   // level black: serve the route's fallback when it has one
	code       string // the error's code; "" is wire.ErrorCode(status, outcome)
	msg        string
}

// writeError writes the contract's JSON error with status and, when o is a
// traffic outcome (not for admin errors), its X-Levee-Outcome header. Its
// code is wire.ErrorCode(status, o).
func writeError(w http.ResponseWriter, status int, o wire.Outcome, traffic bool, field, msg string) {
	code := wire.ErrorCode(status, wire.OutcomeOK)
	if traffic {
		code = wire.ErrorCode(status, o)
	}
	writeErrorCode(w, status, o, traffic, code, field, msg)
}

// writeErrorCode is writeError with the error's code given.
func writeErrorCode(w http.ResponseWriter, status int, o wire.Outcome, traffic bool, code, field, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	d := wire.NewErrorDetail(status, field, msg)
	d.Code = code
	if traffic {
		h.Set(wire.HeaderOutcome, o.String())
		d.Outcome = o.String()
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(wire.ErrorBody{Error: d})
}

// writeShed answers a shed request: 429 for ratelimit and yellow overload
// (with Retry-After, seconds ≥ 1), 503 otherwise.
// code "" is wire.ErrorCode(status, o).
func writeShed(w http.ResponseWriter, o wire.Outcome, status int, retryAfter int, code, msg string) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	if code == "" {
		code = wire.ErrorCode(status, o)
	}
	writeErrorCode(w, status, o, true, code, "", msg)
}

// writeJSON writes v as a JSON 200 answer with outcome o.
func writeJSON(w http.ResponseWriter, o wire.Outcome, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(wire.HeaderOutcome, o.String())
	if o == wire.OutcomeFallback {
		h.Set(wire.HeaderFallback, "true")
	}
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}
