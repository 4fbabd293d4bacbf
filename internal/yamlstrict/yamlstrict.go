// Package yamlstrict decodes the YAML files Levee reads — experiments,
// fake model knob files, gateway configs — so that nothing in them is
// lost without a word. yaml.v3 alone ignores every document after the
// first and truncates a number with a fraction that lands in an integer
// field (count: 2.9 becomes 2); here both are errors naming the line.
package yamlstrict

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Error is YAML that decodes but would lose something: a second document,
// or a number that is not a whole number where the field holds an integer.
type Error struct {
	// Line is the 1-based line of the offending node.
	Line int
	// Path leads from the document's root to the offending value: a string
	// per mapping key, an int per sequence index. Empty for a second
	// document.
	Path []any
	// Msg says what is wrong, e.g. "must be an integer, got the number 2.5".
	Msg string
}

// DottedPath is Path with every element joined by dots ("stages.2.target").
func (e *Error) DottedPath() string {
	parts := make([]string, len(e.Path))
	for i, p := range e.Path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// IndexedPath is Path with indexes in brackets ("ratelimit.rules[1].burst").
func (e *Error) IndexedPath() string {
	var b strings.Builder
	for _, p := range e.Path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

// Error reads "line 3: nodes.count: must be an integer, got the number 2.9".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if p := e.DottedPath(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Decode decodes the one YAML document in data into out (a non-nil
// pointer), strictly:
//
//   - a key out has no field for is an error (yaml.v3's KnownFields);
//   - a second document is an *Error ("more than one YAML document"), and
//     so is a syntax error in it (yaml.v3 would never read it);
//   - a number that is not a whole number (2.5, .inf) where out holds an
//     integer is an *Error naming the field (see CheckIntegers).
//
// It returns the document node, for callers that map fields to lines.
// Data with no document at all decodes nothing and returns io.EOF, as
// yaml.v3 does. Syntax and type errors are yaml.v3's, unchanged (their
// text names the line). On error out may hold part of the document.
func Decode(data []byte, out any) (*yaml.Node, error) {
	docs := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := docs.Decode(&doc); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return nil, err
	}
	var extra yaml.Node
	switch err := docs.Decode(&extra); {
	case err == nil:
		return nil, &Error{Line: extra.Line, Msg: "more than one YAML document (a file holds one; remove the second ---)"}
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	if err := CheckIntegers(&doc, out); err != nil {
		return nil, err
	}
	return &doc, nil
}

// CheckIntegers walks n alongside the Go type of out (what yaml.v3 would
// decode n into) and returns an *Error for the first number that is not a
// whole number, or is out of the integer range, where that type holds an
// integer (int and uint kinds). yaml.v3 truncates such numbers; a whole
// number written as a float (2.0, 1e3) loses nothing and passes. Values
// decoded by their own UnmarshalYAML or UnmarshalText, time.Duration
// (yaml.v3 rejects numbers there itself) and interface values (they keep
// the float) are not walked: a custom unmarshaler calls CheckIntegers on
// its own node. Keys out has no field for are skipped (KnownFields reports
// them).
func CheckIntegers(n *yaml.Node, out any) error {
	return checkInts(n, reflect.TypeOf(out), nil)
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// selfDecoding reports whether yaml.v3 hands values of t to t's own code.
func selfDecoding(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	if _, ok := pt.MethodByName("UnmarshalYAML"); ok {
		return true
	}
	return pt.Implements(textUnmarshalerType)
}

func checkInts(n *yaml.Node, t reflect.Type, path []any) error {
	if n == nil || t == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			if err := checkInts(c, t, path); err != nil {
				return err
			}
		}
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType || selfDecoding(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return checkNumber(n, path, math.MinInt64, math.MaxInt64)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return checkNumber(n, path, 0, math.MaxUint64)
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, c := range n.Content {
			if err := checkInts(c, t.Elem(), with(path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		return checkMapping(n, path, func(string) reflect.Type { return t.Elem() })
	case reflect.Struct:
		fields, rest := structFields(t)
		return checkMapping(n, path, func(k string) reflect.Type {
			if ft, ok := fields[k]; ok {
				return ft
			}
			return rest // nil unless the struct inlines a map
		})
	}
	return nil
}

// checkMapping walks the values of mapping n that yaml.v3 keeps (see
// keptPairs); field gives the type of a key's value (nil: skip it).
func checkMapping(n *yaml.Node, path []any, field func(string) reflect.Type) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for _, kv := range keptPairs(n) {
		k, v := kv[0], kv[1]
		if err := checkInts(v, field(k.Value), with(path, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

// maxMergeDepth bounds how deep merge keys are followed (an alias cycle
// would otherwise never end; yaml.v3 refuses such a document itself).
const maxMergeDepth = 64

// keptPairs lists the key/value pairs of mapping n whose values yaml.v3
// (v3.0.1, decode.go: mappingStruct, mapping, merge) decodes, merge keys
// (<<) resolved as it resolves them: n's own keys first, then those of
// its merge value (only the last << key of a mapping counts; a sequence's
// mappings in order; each merged mapping's own keys before its own
// merge), each key kept only the first time it appears. So a key written
// in n overrides the same key brought in by <<, and an earlier mapping in
// a merge sequence overrides a later one. A value yaml.v3 drops is not
// decoded, so it must not be checked either.
func keptPairs(n *yaml.Node) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	seen := map[string]bool{}
	var walk func(m *yaml.Node, depth int)
	walk = func(m *yaml.Node, depth int) {
		if m != nil && m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		if m == nil || m.Kind != yaml.MappingNode || depth > maxMergeDepth {
			return
		}
		var merge *yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.ShortTag() == "!!merge" {
				merge = v
				continue
			}
			if seen[k.Value] {
				continue
			}
			seen[k.Value] = true
			out = append(out, [2]*yaml.Node{k, v})
		}
		if merge == nil {
			return
		}
		if merge.Kind == yaml.AliasNode {
			merge = merge.Alias
		}
		if merge != nil && merge.Kind == yaml.SequenceNode {
			for _, c := range merge.Content {
				walk(c, depth+1)
			}
			return
		}
		walk(merge, depth+1)
	}
	walk(n, 0)
	return out
}

// checkNumber rejects a float scalar that is not a whole number in
// [lo, hi). Anything else is left to yaml.v3.
func checkNumber(n *yaml.Node, path []any, lo, hi float64) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
		return nil
	}
	var f float64
	if err := (&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: n.Value}).Decode(&f); err != nil {
		return nil // yaml.v3 reports it when it decodes
	}
	if f == math.Trunc(f) && f >= lo && f < hi {
		return nil
	}
	return &Error{Line: n.Line, Path: path, Msg: "must be an integer, got the number " + n.Value}
}

// structFields maps the YAML keys of struct t to their field types, as
// yaml.v3 names them (tag name, else the lower-cased field name; inline
// structs flattened), and returns the value type of an inline map (nil
// when there is none).
func structFields(t reflect.Type) (map[string]reflect.Type, reflect.Type) {
	fields := map[string]reflect.Type{}
	var rest reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		if f.PkgPath != "" && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" && !strings.Contains(string(f.Tag), ":") {
			tag = string(f.Tag)
		}
		if tag == "-" {
			continue
		}
		name, flags, _ := strings.Cut(tag, ",")
		if strings.Contains(","+flags+",", ",inline,") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Map:
				rest = ft.Elem()
			case reflect.Struct:
				sub, subRest := structFields(ft)
				for k, v := range sub {
					if _, taken := fields[k]; !taken {
						fields[k] = v
					}
				}
				if subRest != nil {
					rest = subRest
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields, rest
}

func with(path []any, p any) []any {
	return append(path[:len(path):len(path)], p)
}
