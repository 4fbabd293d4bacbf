package openai

// Valid reports whether b is one JSON value (with white space around it):
// json.Valid's answer (FuzzValidMatchesEncodingJSON), at several times its
// speed: a long string or array of numbers is passed over a byte at a
// time without encoding/json's state machine. A model's answer of a
// megabyte, and each event of a stream, are checked with it.
func Valid(b []byte) bool {
	v := validator{b: b}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.i == len(v.b)
}

// maxDepth is encoding/json's bound on nesting: deeper is not valid.
const maxDepth = 10000

type validator struct {
	b []byte
	i int
}

func (v *validator) space() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

// next returns the byte at v.i, 0 at the end (no JSON value starts with it).
func (v *validator) next() byte {
	if v.i < len(v.b) {
		return v.b[v.i]
	}
	return 0
}

// value checks the value at v.i, inside depth containers.
func (v *validator) value(depth int) bool {
	switch c := v.next(); {
	case c == '{':
		return v.object(depth + 1)
	case c == '[':
		return v.array(depth + 1)
	case c == '"':
		return v.str()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number()
	}
	return false
}

func (v *validator) object(depth int) bool {
	if depth > maxDepth {
		return false
	}
	v.i++ // {
	v.space()
	if v.next() == '}' {
		v.i++
		return true
	}
	for {
		if v.next() != '"' || !v.str() {
			return false
		}
		v.space()
		if v.next() != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value(depth) {
			return false
		}
		v.space()
		switch v.next() {
		case ',':
			v.i++
			v.space()
		case '}':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) array(depth int) bool {
	if depth > maxDepth {
		return false
	}
	v.i++ // [
	v.space()
	if v.next() == ']' {
		v.i++
		return true
	}
	for {
		if !v.value(depth) {
			return false
		}
		v.space()
		switch v.next() {
		case ',':
			v.i++
			v.space()
		case ']':
			v.i++
			return true
		default:
			return false
		}
	}
}

// special marks the bytes a string's check stops at: the quote, the
// backslash and the control characters JSON does not allow in a string.
var special = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func (v *validator) str() bool {
	v.i++ // "
	for {
		for v.i < len(v.b) && !special[v.b[v.i]] {
			v.i++
		}
		switch v.next() {
		case '"':
			v.i++
			return true
		case '\\':
			v.i++
			switch v.next() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i++
			case 'u':
				v.i++
				for range 4 {
					if !isHex(v.next()) {
						return false
					}
					v.i++
				}
			default:
				return false
			}
		default: // a control character, or the end
			return false
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (v *validator) literal(word string) bool {
	if len(v.b)-v.i < len(word) || string(v.b[v.i:v.i+len(word)]) != word {
		return false
	}
	v.i += len(word)
	return true
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (v *validator) number() bool {
	if v.next() == '-' {
		v.i++
	}
	switch c := v.next(); {
	case c == '0':
		v.i++
	case c >= '1' && c <= '9':
		v.digits()
	default:
		return false
	}
	if v.next() == '.' {
		v.i++
		if !v.digits() {
			return false
		}
	}
	if c := v.next(); c == 'e' || c == 'E' {
		v.i++
		if c := v.next(); c == '+' || c == '-' {
			v.i++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}

// digits passes over [0-9]+ and reports whether there was one.
func (v *validator) digits() bool {
	start := v.i
	for v.i < len(v.b) && v.b[v.i] >= '0' && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i > start
}
