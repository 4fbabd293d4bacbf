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

// writeError writes the contract's JSON error with status and, when o is a
// traffic outcome (not for admin errors), its X-Levee-Outcome header.
func writeError(w http.ResponseWriter, status int, o wire.Outcome, traffic bool, field, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	d := wire.NewErrorDetail(status, field, msg)
	if traffic {
		h.Set(wire.HeaderOutcome, o.String())
		d.Outcome = o.String()
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(wire.ErrorBody{Error: d})
}

// writeShed answers a shed request: 429 for ratelimit and yellow overload
// (with Retry-After, seconds ≥ 1), 503 otherwise.
func writeShed(w http.ResponseWriter, o wire.Outcome, status int, retryAfter int, msg string) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	writeError(w, status, o, true, "", msg)
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
