package fakemodel

import (
	"encoding/json"
	"net/http"

	"github.com/levee-lab/levee/internal/wire"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encoding the answer failed","type":"server_error","code":"` + wire.CodeInternalError + `"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError answers an OpenAI-shaped error (docs/CONTRACTS.md): msg,
// the field to blame (may be empty), the status's type and the code
// wire.ErrorCode gives the status.
func writeError(w http.ResponseWriter, status int, msg, field string) {
	writeErrorCode(w, status, wire.ErrorCode(status, wire.OutcomeOK), msg, field)
}

// writeErrorCode is writeError with the code given: for a cause the
// status alone does not name (a full node's 429 is overloaded, not rate
// limited).
func writeErrorCode(w http.ResponseWriter, status int, code, msg, field string) {
	d := wire.NewErrorDetail(status, field, msg)
	d.Code = code
	writeJSON(w, status, wire.ErrorBody{Error: d})
}
