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
		b = []byte(`{"error":{"message":"encoding the answer failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg, field string) {
	writeJSON(w, status, wire.ErrorBody{Error: wire.NewErrorDetail(status, field, msg)})
}
