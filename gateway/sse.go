package gateway

import (
	"bytes"
	"io"

	"github.com/levee-lab/levee/internal/openai"
)

// sseRelay passes a model's SSE stream to a client event by event: an
// event is held until its blank line (at most max bytes, which is
// stream.buffer_bytes), then metered and written whole, in one write, or
// dropped whole when it is a usage chunk the client did not ask for — its
// "event:", "id:" and comment lines and its blank line with it, so the
// client sees no empty event and no field of the dropped event on the
// next one. Everything else reaches the client byte for byte, line
// endings ("\n" or "\r\n") included. An event larger than the buffer is
// passed through as it comes, unmetered and never dropped.
type sseRelay struct {
	w     io.Writer // the client
	m     *streamMeter
	event []byte // the current event's bytes so far
	// max bounds event. Its buffer grows to the largest event held, not
	// to max at once: an open stream of small events holds a few hundred
	// bytes here, not stream.buffer_bytes.
	max     int
	spilled bool   // the current event outgrew event: its bytes so far are written
	partial bool   // the last bytes added were a line's beginning, not its end
	data    []byte // scratch for the event's data
	// sawData: a "data" line has begun — the model's first token, for
	// the time to first token. Comment lines (": PROCESSING",
	// ": keep-alive", which vLLM and OpenRouter send while the request
	// waits) and "event:"/"id:"/"retry:" lines are not tokens.
	sawData bool
	// done: the "data: [DONE]" event was written — the answer is whole
	// for an OpenAI client, which stops reading there (and may close the
	// connection before the model's stream ends).
	done bool
}

// add takes what the reader returned: a whole line (complete), or the
// beginning of one longer than the reader's buffer. It writes an event
// that a blank line ends, and the bytes of an event that outgrew the
// buffer. Errors are the client's write errors.
func (r *sseRelay) add(line []byte, complete bool) error {
	blank := complete && !r.partial && (string(line) == "\n" || string(line) == "\r\n")
	if !r.sawData && !r.partial && isDataLine(line) {
		r.sawData = true
	}
	r.partial = !complete
	if !r.spilled && len(r.event)+len(line) <= r.max {
		r.event = append(r.event, line...)
	} else {
		if !r.spilled {
			r.spilled = true
			if err := r.write(r.event); err != nil {
				return err
			}
			r.event = r.event[:0]
		}
		if err := r.write(line); err != nil {
			return err
		}
	}
	if blank {
		return r.end()
	}
	return nil
}

// isDataLine reports whether line (the beginning of a line at least) is
// an SSE "data" field: "data:…", or "data" alone.
func isDataLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("data"))
	if !ok {
		return false
	}
	return len(rest) == 0 || rest[0] == ':' || rest[0] == '\n' || rest[0] == '\r'
}

// end ends the current event, at its blank line or at the stream's end:
// it is metered and written, or dropped (see sseRelay).
func (r *sseRelay) end() error {
	ev := r.event
	r.event = r.event[:0]
	if r.spilled {
		r.spilled = false
		return nil
	}
	r.data = openai.EventData(r.data, ev)
	if r.m.Event(r.data) && r.m.strip {
		return nil
	}
	if err := r.write(ev); err != nil {
		return err
	}
	if string(bytes.TrimSpace(r.data)) == "[DONE]" {
		r.done = true
	}
	return nil
}

func (r *sseRelay) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := r.w.Write(b)
	return err
}

// streamMeter measures a relayed stream for the token budget.
type streamMeter struct {
	openai.StreamMeter
	strip bool // drop the usage chunk: the gateway asked for it, not the client
}

// meterStream prepares the metering of a stream: with stream.request_usage
// and a client that named no stream_options, *body asks the model for a
// final usage chunk, which the relay then keeps from the client — unless
// that would take the body past body_limit_bytes: the gateway sends no
// model a body larger than it takes itself (a model with the same limit
// would answer a client that kept within it 413).
func (g *Gateway) meterStream(body *[]byte, hasStreamOptions bool) *streamMeter {
	m := &streamMeter{}
	fits := int64(len(*body)+len(usageOption)) <= g.cfg.BodyLimitBytes
	if g.cfg.Stream.RequestUsage && !hasStreamOptions && fits {
		if i := bytes.IndexByte(*body, '{'); i >= 0 {
			b := make([]byte, 0, len(*body)+len(usageOption))
			b = append(append(append(b, (*body)[:i+1]...), usageOption...), (*body)[i+1:]...)
			*body, m.strip = b, true
		}
	}
	return m
}

// usageOption is spliced into a stream request's object by meterStream.
const usageOption = `"stream_options":{"include_usage":true},`

// used is the stream's tokens: its usage chunk, or prompt (the prompt's
// estimate) plus the chunks that carried content.
func (m *streamMeter) used(prompt int64) int64 {
	if u, ok := m.Usage(); ok {
		return u.Total()
	}
	return prompt + int64(m.Chunks())
}
