package openai

import (
	"bytes"
	"strconv"
)

// onlyKey reports whether the object body (valid JSON once trimmed, as
// DecodeObject takes it) has at most one key that encoding/json could
// match to the field name (see keyValue).
func onlyKey(body []byte, name string) bool {
	_, n := keyValue(bytes.TrimSpace(body), name)
	return n <= 1
}

// keyValue counts the keys of the top-level object of body (valid JSON)
// that encoding/json could match to the field name — name itself in any
// case, or a key it cannot tell from it (escaped, or with bytes outside
// ASCII) — up to 2, and returns the value of the first when it is
// certainly one (not escaped, ASCII). n is -1 when body is not an
// object: encoding/json would not read it as a struct.
func keyValue(body []byte, name string) (v []byte, n int) {
	s := scanner{b: body}
	if s.peek() != '{' {
		return nil, -1
	}
	s.object(func(key []byte, plain bool) bool {
		val := s.value()
		if !plain || bytes.EqualFold(key, []byte(name)) {
			if n++; n == 1 && plain {
				v = val
			}
		}
		return n <= 1
	})
	return v, n
}

// scanner walks valid JSON.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space (0 at the end).
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// known returns the index of key in names when it is one of them exactly,
// keyUnknown when encoding/json would match it to none of them, keyOther
// when it might (escapes, bytes outside ASCII, another case).
func (s *scanner) known(key []byte, plain bool, names []string) int {
	if !plain {
		return keyOther
	}
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return keyOther
		}
	}
	return keyUnknown
}

// object reads an object at the next byte, calling field for each key
// with the scanner at its value, which field must read; it stops, false,
// when field does.
func (s *scanner) object(field func(key []byte, plain bool) bool) bool {
	s.space()
	s.i++ // {
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		s.space()
		key, plain := s.str()
		s.space()
		s.i++ // :
		s.space()
		if !field(key, plain) {
			return false
		}
		if s.peek() == ',' {
			s.i++
			continue
		}
		s.i++ // }
		return true
	}
}

// fields reads an object at the next byte whose keys the decoding
// matches to names (at most 64), calling field with a key's index and the
// scanner at its value, which field must read. A key matching none of
// them is skipped; one that might match in a way the scanner does not
// read (keyOther), or a known key twice, stops it, false, as field does.
func (s *scanner) fields(names []string, field func(k int) bool) bool {
	var seen uint64
	return s.object(func(key []byte, plain bool) bool {
		k := s.known(key, plain, names)
		switch {
		case k == keyUnknown:
			s.value()
			return true
		case k < 0 || seen&(1<<k) != 0:
			return false
		}
		seen |= 1 << k
		return field(k)
	})
}

// array reads an array at the next byte, calling elem with the scanner at
// each element, which elem must read; it stops, false, when elem does.
func (s *scanner) array(elem func() bool) bool {
	s.space()
	s.i++ // [
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		s.space()
		if !elem() {
			return false
		}
		if s.peek() == ',' {
			s.i++
			continue
		}
		s.i++ // ]
		return true
	}
}

// str reads a string at s.i and returns its raw contents; plain is false
// when they hold an escape or a byte outside ASCII.
func (s *scanner) str() (raw []byte, plain bool) {
	s.i++ // "
	start, plain := s.i, true
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, plain
		case c == '\\':
			plain = false
			s.i += 2
		case c >= 0x80:
			plain = false
			s.i++
		default:
			s.i++
		}
	}
	return s.b[start:], false
}

// skipString reads the string at s.i, a quote at a time: a long text
// is passed over at the speed of bytes.IndexByte.
func (s *scanner) skipString() {
	s.i++ // "
	for {
		k := bytes.IndexByte(s.b[s.i:], '"')
		if k < 0 {
			s.i = len(s.b)
			return
		}
		s.i += k + 1
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		odd := false
		for j := s.i - 2; j >= 0 && s.b[j] == '\\'; j-- {
			odd = !odd
		}
		if !odd {
			return
		}
	}
}

// structural marks the bytes value looks at inside an array or object.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// value reads the value at the next byte and returns its bytes, as a
// json.RawMessage would hold them.
func (s *scanner) value() []byte {
	s.space()
	start := s.i
	if start >= len(s.b) {
		return nil // not valid JSON: never read
	}
	switch s.b[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			if !structural[s.b[s.i]] { // numbers, commas, literals: most of an array
				s.i++
				continue
			}
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return s.b[start:s.i]
			}
		}
	default: // a number, true, false or null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.b[start:s.i]
			}
			s.i++
		}
	}
	return s.b[start:s.i]
}

// usageKeys are Usage's fields, in its order.
var usageKeys = [...]string{"prompt_tokens", "completion_tokens", "total_tokens"}

// plainUsage reads a usage object (valid JSON) whose counts are all
// integers in int64 under their exact names, each once: what
// encoding/json would decode it to, without its reflection. ok is false
// for anything else (a null, a fraction, a name in another case…): the
// caller decodes it with encoding/json.
func plainUsage(v []byte) (u Usage, ok bool) {
	s := scanner{b: v}
	if s.peek() != '{' {
		return Usage{}, false
	}
	ok = s.fields(usageKeys[:], func(k int) bool {
		n, err := strconv.ParseInt(string(s.value()), 10, 64)
		if err != nil || n != int64(int(n)) {
			return false
		}
		switch k {
		case 0:
			u.PromptTokens = int(n)
		case 1:
			u.CompletionTokens = int(n)
		default:
			u.TotalTokens = int(n)
		}
		return true
	})
	return u, ok
}
