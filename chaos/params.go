package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// decodeParams decodes p, one JSON object, over f's defaults. Beyond
// encoding/json's own checks it refuses what that package lets through:
// a name that matches a parameter only when case is ignored ("NODE"), a
// name given twice (the last would silently win) and anything after the
// object (`{"multiplier":2}}`).
func decodeParams(name string, f Fault, p []byte) error {
	if err := checkParamNames(name, f, p); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return fmt.Errorf("chaos: %s: parameters: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("chaos: %s: parameters: trailing data after the JSON object", name)
	}
	return nil
}

// checkParamNames walks the names of p's top-level object (if it is one;
// other shapes are left to the decoder's error) and refuses a duplicate or
// a name that is not exactly one of f's parameters.
func checkParamNames(name string, f Fault, p []byte) error {
	known := paramNames(reflect.TypeOf(f))
	dec := json.NewDecoder(bytes.NewReader(p))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil // malformed: the decoder names it
		}
		key, _ := tok.(string)
		switch {
		case seen[key]:
			return paramErr(name, key, "given twice")
		case !known[key]:
			for k := range known {
				if strings.EqualFold(k, key) {
					return paramErr(name, key, "unknown parameter (names are exact: %s)", k)
				}
			}
			// Unknown altogether: the decoder's "unknown field" says so.
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// paramNames is the set of JSON names of t's exported fields, embedded
// structs' included (t a struct or a pointer to one).
func paramNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return names
	}
	for _, sf := range reflect.VisibleFields(t) {
		if !sf.IsExported() || sf.Anonymous {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		n, _, _ := strings.Cut(tag, ",")
		if n == "" {
			n = sf.Name
		}
		names[n] = true
	}
	return names
}
