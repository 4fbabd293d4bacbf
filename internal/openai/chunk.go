package openai

// chunkGenerated reads a stream chunk of the usual shape — an object with
// "choices", an array of objects each with a "delta" object and/or a
// "text", and no "usage" — without encoding/json's reflection: it reports
// whether a choice carries generated tokens (delta.generated or text, as
// StreamMeter.Event's decoding would find them). ok is false for anything
// else, and whenever encoding/json could read the chunk differently from
// this scanner (a key that is escaped, not ASCII, or a known key in
// another case; a known key twice; a value of a type the decoding would
// refuse; a "usage" or an "error" key): the caller then decodes the chunk with
// encoding/json. data must be valid JSON (json.Valid) that begins with
// '{'. It does not allocate.
func chunkGenerated(data []byte) (gen, ok bool) {
	s := scanner{b: data}
	ok = s.fields(topKeys[:], func(k int) bool {
		if k != 0 || s.peek() != '[' { // usage, error, or choices not an array
			return false
		}
		return s.array(func() bool {
			if s.peek() != '{' {
				return false
			}
			g, ok := s.choice()
			gen = gen || g
			return ok
		})
	})
	return gen, ok
}

// The keys encoding/json would match in a chunk, by level.
var (
	topKeys    = [...]string{"choices", "usage", "error"}
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
	ok = s.fields(choiceKeys[:], func(k int) bool {
		if k == 1 { // text
			gen = gen || generated(s.value())
			return true
		}
		if s.peek() != '{' { // delta
			return false
		}
		return s.fields(deltaKeys[:], func(int) bool {
			gen = gen || generated(s.value())
			return true
		})
	})
	return gen, ok
}
