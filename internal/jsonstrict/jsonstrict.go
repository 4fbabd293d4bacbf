// Package jsonstrict checks the names in a JSON text against the Go value
// it is about to be decoded into, for what encoding/json lets through
// even with DisallowUnknownFields: a name that matches a field only when
// case is ignored ({"SLOTS":3} sets Slots) and a name given twice in one
// object (the last silently wins). Levee's admin APIs and fault
// parameters take patches where either would change something the user
// did not name.
package jsonstrict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// NameError is a name that is given twice, that differs from a field's
// only in case, or that names no field at all.
type NameError struct {
	// Path is the dotted path of the offending name ("classes.ai.Limit"),
	// array indexes in brackets.
	Path string
	// Exact is the path with the field's exact name, when the name differs
	// from it only in case ("classes.ai.limit"); else "".
	Exact string
	// Twice is set for a name given twice in one object.
	Twice bool
	// Msg says what is wrong, naming the exact name when there is one.
	Msg string
}

func (e *NameError) Error() string { return e.Path + ": " + e.Msg }

// Check walks data, a JSON text, beside the type of v (a pointer, as for
// json.Unmarshal) and returns a *NameError for the first name given twice
// in one object, or naming no field of a struct (exactly: one that matches
// only when case is ignored says which it would have been). Unlike the
// decoder's "unknown field", the error has the name's whole path. It
// returns nil for anything else, malformed JSON included: the decoder's
// own error names that. Its work is linear in len(data), however deeply
// the text nests: malformed JSON (nested deeper than encoding/json's limit
// included) is not walked, and a path is spelled out only for the error.
func Check(data []byte, v any) error {
	if !json.Valid(data) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walk(dec, reflect.TypeOf(v), path{})
}

// path leads to a value: one element a key (".name", or "name" first) or an
// index ("[3]"). Appending shares the backing array between siblings, so
// a deep value costs one element, not a copy of its whole path.
type path []string

// key is p followed by the key name.
func (p path) key(name string) path {
	if name == "" {
		name = `""` // an empty name, as JSON writes it: a path never ends in "." or is ""
	}
	if len(p) == 0 {
		return append(p, name)
	}
	return append(p, "."+name)
}

func (p path) String() string { return strings.Join(p, "") }

// walk reads one value from dec, the type t describes (nil: any).
func walk(dec *json.Decoder, t reflect.Type, at path) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && implementsUnmarshaler(t) {
		// It decodes itself (json.RawMessage, a duration): its names are
		// its own business.
		var skip json.RawMessage
		_ = dec.Decode(&skip)
		return nil
	}
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, t, at)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walk(dec, elem, append(at, fmt.Sprintf("[%d]", i))); err != nil {
				return err
			}
		}
		_, _ = dec.Token() // ']'
	}
	return nil
}

func walkObject(dec *json.Decoder, t reflect.Type, obj path) error {
	var fields map[string]reflect.Type // exact name → type, t a struct
	var elem reflect.Type              // t a map: its values' type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = structFields(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		at := obj.key(key)
		if seen[key] {
			return &NameError{Path: at.String(), Twice: true, Msg: "given twice"}
		}
		seen[key] = true
		next := elem
		if fields != nil {
			ft, ok := fields[key]
			if !ok {
				return unknownName(fields, obj, key)
			}
			next = ft
		}
		if err := walk(dec, next, at); err != nil {
			return err
		}
	}
	_, _ = dec.Token() // '}'
	return nil
}

// unknownName is the error of key, which names none of fields (the fields
// of the object at obj).
func unknownName(fields map[string]reflect.Type, obj path, key string) *NameError {
	at := obj.key(key).String()
	for name := range fields {
		if strings.EqualFold(name, key) {
			exact := obj.key(name).String()
			return &NameError{Path: at, Exact: exact, Msg: fmt.Sprintf("unknown field (names are exact: %s)", name)}
		}
	}
	return &NameError{Path: at, Msg: "unknown field"}
}

// structFields maps the JSON names of t's fields, embedded structs'
// promoted fields included, to their types.
func structFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for _, sf := range reflect.VisibleFields(t) {
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" || (sf.Anonymous && tag == "") {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		fields[name] = sf.Type
	}
	return fields
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// implementsUnmarshaler reports whether t decodes itself.
func implementsUnmarshaler(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// TypeMessage phrases encoding/json's type error in JSON's words, not Go's
// type names: "must be an integer, got a JSON string". A number that does
// not fit (1e30 or 1.5 for an integer) says so. te.Field names the field.
func TypeMessage(te *json.UnmarshalTypeError) string {
	want := JSONType(te.Type)
	if num, ok := strings.CutPrefix(te.Value, "number "); ok {
		return fmt.Sprintf("must be %s, got the number %s", want, num)
	}
	return fmt.Sprintf("must be %s, got a JSON %s", want, te.Value)
}

// JSONType names the JSON value a Go type decodes from, with its article
// ("an integer", "a string", "an array", …).
func JSONType(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if t == reflect.TypeFor[json.RawMessage]() {
			return "a JSON value"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}
