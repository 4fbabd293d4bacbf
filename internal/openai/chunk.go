package openai

// chunkGenerated reads a stream chunk of the usual shape — an object with
// "choices", an array of objects each with a "delta" object and/or a
// "text", and no "usage" — without encoding/json's reflection: it reports
// whether a choice carries generated tokens (delta.generated or text, as
// StreamMeter.Event's decoding would find them). ok is false for anything
// else, and whenever encoding/json could read the chunk differently from
// this scanner (a key that is escaped, not ASCII, or a known key in
// another case; a known key twice; a value of a type the decoding would
// refuse; a "usage" key): the caller then decodes the chunk with
// encoding/json. data must be valid JSON (json.Valid) that begins with
// '{'. It does not allocate.
func chunkGenerated(data []byte) (gen, ok bool) {
	s := scanner{b: data}
	seenChoices := false
	ok = s.object(func(key []byte, plain bool) bool {
		switch k := s.known(key, plain, topKeys[:]); k {
		case keyUnknown:
			s.value()
			return true
		case 0: // choices
			if seenChoices || s.peek() != '[' {
				return false
			}
			seenChoices = true
			return s.array(func() bool {
				if s.peek() != '{' {
					return false
				}
				g, ok := s.choice()
				gen = gen || g
				return ok
			})
		default: // usage, or a known key in another case
			return false
		}
	})
	return gen, ok
}

// The keys encoding/json would match in a chunk, by level.
var (
	topKeys    = [...]string{"choices", "usage"}
	choiceKeys = [...]string{"delta", "text"}
	deltaKeys  = [...]string{"content", "refusal", "reasoning_content", "reasoning", "tool_calls"}
)

const (
	keyUnknown = -1 // no field of the level: skipped
	keyOther   = -2 // may match a field in a way the scanner does not read
)

// choice reads one element of "choices": whether its delta's fields or
// its text carry generated tokens.
func (s *scanner) choice() (gen, ok bool) {
	var seen [len(choiceKeys)]bool
	ok = s.object(func(key []byte, plain bool) bool {
		k := s.known(key, plain, choiceKeys[:])
		switch {
		case k == keyUnknown:
			s.value()
			return true
		case k < 0 || seen[k]:
			return false
		}
		seen[k] = true
		if k == 1 { // text
			gen = gen || generated(s.value())
			return true
		}
		if s.peek() != '{' { // delta
			return false
		}
		var seenField [len(deltaKeys)]bool
		return s.object(func(key []byte, plain bool) bool {
			f := s.known(key, plain, deltaKeys[:])
			switch {
			case f == keyUnknown:
				s.value()
				return true
			case f < 0 || seenField[f]:
				return false
			}
			seenField[f] = true
			gen = gen || generated(s.value())
			return true
		})
	})
	return gen, ok
}
