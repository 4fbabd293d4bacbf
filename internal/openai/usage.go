package openai

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Usage is the token count of a chat answer (its "usage" object).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// maxUsage bounds a usage count read from an answer: a backend's nonsense
// must not turn into an overflow of the budget's arithmetic.
const maxUsage = 1 << 30

func (u Usage) clamped() Usage {
	c := func(n int) int { return min(max(n, 0), maxUsage) }
	u.PromptTokens, u.CompletionTokens = c(u.PromptTokens), c(u.CompletionTokens)
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int64 { return int64(u.PromptTokens) + int64(u.CompletionTokens) }

// AnswerUsage reads the "usage" object of a non-streamed chat answer. ok
// is false when the answer has none or it is not an object of numbers.
// Counts are clamped to [0, 2^30].
func AnswerUsage(body []byte) (u Usage, ok bool) {
	if !Valid(body) {
		return Usage{}, false
	}
	return ValidAnswerUsage(body)
}

// ValidAnswerUsage is AnswerUsage of a body known to be valid JSON
// (Valid). It decodes the "usage" value alone when the answer has
// one key encoding/json would match to it (see onlyKey), which an
// answer of a megabyte reads without a second pass of encoding/json over
// its text; else the whole answer, as AnswerUsage always did.
func ValidAnswerUsage(body []byte) (u Usage, ok bool) {
	var p *Usage
	switch v, n := keyValue(body, "usage"); {
	case n == 0:
		return Usage{}, false
	case n == 1 && v != nil:
		if u, ok := plainUsage(v); ok {
			return u.clamped(), true
		}
		if json.Unmarshal(v, &p) != nil {
			return Usage{}, false
		}
	default:
		var a struct {
			Usage *Usage `json:"usage"`
		}
		if json.Unmarshal(body, &a) != nil {
			return Usage{}, false
		}
		p = a.Usage
	}
	if p == nil {
		return Usage{}, false
	}
	return p.clamped(), true
}

// StreamMeter measures a streamed chat or legacy completion answer (SSE)
// as it is relayed,
// event by event: it counts the chunks that carry generated tokens and keeps the
// usage of a final usage chunk (stream_options.include_usage). The zero value is ready;
// it is not safe for concurrent use.
type StreamMeter struct {
	chunks   int
	usage    Usage
	hasUsage bool
	failed   bool
}

// EventData returns the data of one SSE event as an EventSource hands it
// to its client: the values of the event's "data" fields, in order,
// joined by "\n" (one space after the colon removed, as SSE says). event
// is the event's lines, each ending in "\n" or "\r\n", the blank line
// that ends it included or not. It returns nil when the event has no data
// field (a comment, an "event:" or "id:" line alone). The result is
// appended to buf[:0].
func EventData(buf, event []byte) []byte {
	var data []byte
	has := false
	for len(event) > 0 {
		line := event
		if i := bytes.IndexByte(event, '\n'); i >= 0 {
			line, event = event[:i], event[i+1:]
		} else {
			event = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		name, value, colon := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue
		}
		if colon {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		if !has {
			data, has = buf[:0], true
		} else {
			data = append(data, '\n')
		}
		data = append(data, value...)
	}
	return data
}

// Event reads the data of one SSE event (EventData). It reports whether
// the event is a usage-only chunk (usage set, no choices), which a relay
// drops when its client did not ask for usage. "[DONE]" and data that is
// not a JSON object are ignored.
func (m *StreamMeter) Event(data []byte) (usageOnly bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !Valid(data) {
		return false
	}
	// The usual chunk is read without reflection (chunkGenerated); it
	// is one per token. Anything else, the usage chunk included, is
	// decoded.
	if gen, ok := chunkGenerated(data); ok {
		if gen {
			m.chunks++
		}
		return false
	}
	return m.decode(data)
}

// decode is Event's reading of a chunk with encoding/json.
func (m *StreamMeter) decode(data []byte) (usageOnly bool) {
	var c struct {
		Choices []struct {
			Delta delta `json:"delta"`
			// Text is a legacy completion chunk's generated text.
			Text json.RawMessage `json:"text"`
		} `json:"choices"`
		Usage *Usage `json:"usage"`
		// Error is a failure the server reports inside the stream,
		// after its 200: vLLM, llama.cpp's server and OpenAI send
		// {"error":{…}} (then, vLLM, "[DONE]").
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &c) != nil {
		return false
	}
	if generated(c.Error) {
		m.failed = true
	}
	for _, ch := range c.Choices {
		if ch.Delta.generated() || generated(ch.Text) {
			m.chunks++
			break
		}
	}
	if c.Usage != nil {
		m.usage, m.hasUsage = c.Usage.clamped(), true
		return len(c.Choices) == 0
	}
	return false
}

// delta is what Event reads of a stream chunk's choice: the fields a
// model generates tokens into, raw, so that one of an unexpected type
// costs the chunk's count, never the event's usage.
type delta struct {
	Content          json.RawMessage `json:"content"`
	Refusal          json.RawMessage `json:"refusal"`
	ReasoningContent json.RawMessage `json:"reasoning_content"` // vLLM, DeepSeek
	Reasoning        json.RawMessage `json:"reasoning"`         // vLLM ≥ 0.10, OpenRouter, llama.cpp
	ToolCalls        json.RawMessage `json:"tool_calls"`
}

// generated reports whether the delta carries generated tokens: text,
// a refusal, reasoning or a piece of a tool call.
func (d delta) generated() bool {
	return slices.ContainsFunc([]json.RawMessage{d.Content, d.Refusal, d.ReasoningContent, d.Reasoning, d.ToolCalls}, generated)
}

// generated reports whether a chunk's field holds something: not absent,
// null or empty.
func generated(v json.RawMessage) bool {
	switch string(v) {
	case "", "null", `""`, "[]", "{}":
		return false
	}
	return true
}

// Chunks is the number of chunks that carried generated tokens (content,
// a refusal, reasoning, a tool call's pieces or a completion's text): about one per completion
// token for most servers.
func (m *StreamMeter) Chunks() int { return m.chunks }

// Failed reports whether an event carried an error object (a top-level
// "error" that is not null or empty): the server failed mid-stream, so
// the answer is not whole even when "[DONE]" follows. openai-python
// raises on such an event too.
func (m *StreamMeter) Failed() bool { return m.failed }

// Usage returns the stream's usage chunk, and false when it had none.
func (m *StreamMeter) Usage() (Usage, bool) { return m.usage, m.hasUsage }
