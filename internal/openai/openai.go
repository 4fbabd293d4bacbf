package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// DecodeObject decodes exactly one JSON object from body into v. Unknown
// fields are ignored, as OpenAI-compatible servers do. Errors are
// *RequestError: an empty body, a body that is not an object, malformed
// JSON, a wrong type (naming the field) or trailing data.
func DecodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 {
		return &RequestError{Msg: "empty body: want a JSON object"}
	}
	if b[0] != '{' {
		return &RequestError{Msg: "body must be a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &RequestError{Field: te.Field, Msg: fmt.Sprintf("wrong type: got JSON %s, want %s", te.Value, te.Type)}
		}
		return &RequestError{Msg: "malformed JSON: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &RequestError{Msg: "trailing data after the JSON object"}
	}
	return nil
}
