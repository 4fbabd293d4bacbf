package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/levee-lab/levee/internal/jsonstrict"
)

// RequestError is a bad request body (400). Field names the JSON field to
// blame ("messages[2].content"), "" when the body as a whole is wrong.
type RequestError struct {
	Field string
	Msg   string
}

func (e *RequestError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// bom is the UTF-8 byte order mark.
var bom = []byte("\xef\xbb\xbf")

// TrimBOM returns body without a leading UTF-8 byte order mark. Editors
// and shells on Windows write one at the start of a UTF-8 file (Windows
// PowerShell's Out-File -Encoding utf8), so `curl -d @file` sends it;
// Python's json.loads, and so vLLM's FastAPI, skips it, encoding/json
// and serde_json do not. A server that reads such a body, and a relay
// that forwards it, take it off first.
func TrimBOM(body []byte) []byte { return bytes.TrimPrefix(body, bom) }

// DecodeObject decodes exactly one JSON object from body into v. Unknown
// fields are ignored, as OpenAI-compatible servers do. Errors are
// *RequestError: an empty body, a body that is not an object, malformed
// JSON, a wrong type (naming the field and the JSON types, never a Go
// type) or trailing data.
func DecodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return &RequestError{Msg: "empty body: want a JSON object"}
	}
	if b[0] != '{' {
		return &RequestError{Msg: "body must be a JSON object"}
	}
	// json.Unmarshal reads a body that is one JSON value without the
	// Decoder's copy of it; it refuses any other before it decodes (a
	// *json.SyntaxError, v untouched), and the Decoder then says why:
	// its messages tell trailing data and a cut-off body apart.
	err := json.Unmarshal(b, v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		dec := json.NewDecoder(bytes.NewReader(b))
		if err = dec.Decode(v); err == nil {
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				return &RequestError{Msg: "trailing data after the JSON object"}
			}
		}
	}
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return TypeError(te)
		}
		return &RequestError{Msg: "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	return nil
}

// TypeError turns encoding/json's type error into a *RequestError that
// names the field and speaks JSON (see jsonstrict.TypeMessage).
func TypeError(te *json.UnmarshalTypeError) *RequestError {
	return &RequestError{Field: te.Field, Msg: jsonstrict.TypeMessage(te)}
}
