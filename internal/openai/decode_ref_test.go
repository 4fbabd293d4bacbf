package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// decodeObjectReference is DecodeObject as it was before it tried
// json.Unmarshal first: a json.Decoder and a look for trailing data.
func decodeObjectReference(body []byte, v any) error {
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
			return TypeError(te)
		}
		return &RequestError{Msg: "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &RequestError{Msg: "trailing data after the JSON object"}
	}
	return nil
}

// decodeTarget is a request's fields of several kinds.
type decodeTarget struct {
	Model   *string           `json:"model"`
	N       *int              `json:"n"`
	Raw     json.RawMessage   `json:"raw"`
	List    []json.RawMessage `json:"list"`
	Strings []string          `json:"strings"`
	Nested  struct {
		F float64 `json:"f"`
	} `json:"nested"`
}

var decodeCases = []string{
	`{"model":"m","n":2,"raw":[1,{"a":null}],"list":[1,"x"],"strings":["a"],"nested":{"f":1.5}}`,
	`{"n":"x"}`, `{"n":1.5}`, `{"n":1e400}`, `{"nested":[]}`, `{"strings":[1]}`, `{"model":"a"} x`, `{"model":"a"}}`,
	`{"model":"a"} {"n":1}`, `{"model":`, `{"model":"\x01"}`, "{\"model\":\"\xff\"}", `{"a":[` + strings.Repeat("[", 10001),
	`{}`, ` {} `, `{"model":"a",}`, `{"n":01}`, `[]`, ``, `"x"`, `{"n":2,"n":"y"}`,
}

// TestDecodeObjectMatchesReference: DecodeObject decodes and refuses as
// the reference does, with the same messages.
func TestDecodeObjectMatchesReference(t *testing.T) {
	for _, c := range decodeCases {
		checkDecodeObject(t, []byte(c))
	}
}

func checkDecodeObject(t *testing.T, body []byte) {
	t.Helper()
	var got, want decodeTarget
	gerr, werr := DecodeObject(body, &got), decodeObjectReference(body, &want)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\n got %+v, %v\nwant %+v, %v", body, got, gerr, want, werr)
	}
	var gm, wm map[string]any
	gerr, werr = DecodeObject(body, &gm), decodeObjectReference(body, &wm)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(gm, wm) {
		t.Errorf("%q as a map:\n got %+v, %v\nwant %+v, %v", body, gm, gerr, wm, werr)
	}
}

// FuzzDecodeObjectMatchesReference: on any body DecodeObject answers as
// the reference does.
func FuzzDecodeObjectMatchesReference(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecodeObject(t, body)
	})
}
