package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// relayAll runs stream through an sseRelay as relaySSE does, reading
// through a buffer of size bytes (stream.buffer_bytes), and returns what
// the client got.
func relayAll(t *testing.T, stream []byte, size int, m *streamMeter) []byte {
	var out bytes.Buffer
	relay := &sseRelay{w: &out, m: m, event: make([]byte, 0, size)}
	br := bufio.NewReaderSize(bytes.NewReader(stream), size)
	for {
		line, rerr := br.ReadSlice('\n')
		err := relay.add(line, !errors.Is(rerr, bufio.ErrBufferFull))
		if err == nil && errors.Is(rerr, io.EOF) {
			err = relay.end()
		}
		switch {
		case err != nil:
			t.Fatalf("writing to a bytes.Buffer failed: %v", err)
		case rerr == nil || errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case errors.Is(rerr, io.EOF):
			return out.Bytes()
		default:
			t.Fatalf("reading a bytes.Reader failed: %v", rerr)
		}
	}
}

// FuzzSSERelay: any bytes a model streams — malformed "data:" lines,
// lines longer than the buffer, no [DONE], usage chunks, CR LF — reach a
// client that asked for usage byte for byte; for one that did not, only
// usage-only events are dropped, so a stream without a usage chunk also
// arrives unchanged. The settled tokens are never negative. It never
// panics.
func FuzzSSERelay(f *testing.F) {
	for _, tc := range sseCases {
		f.Add([]byte(tc.stream), uint16(4096), true)
		f.Add([]byte(tc.stream), uint16(16), true)
		f.Add([]byte(tc.stream), uint16(40), false)
	}
	f.Add([]byte("data: {\"usage\":{\"prompt_tokens\":1e99}}\n\ndata"), uint16(16), true)
	f.Add([]byte("data:\r\n\r\n\n\n:\n"), uint16(0), true)
	f.Fuzz(func(t *testing.T, stream []byte, bufSize uint16, strip bool) {
		size := 16 + int(bufSize)%4096 // bufio's least buffer is 16 bytes
		m := &streamMeter{strip: strip}
		out := relayAll(t, stream, size, m)
		u, hasUsage := m.Usage()
		if (!strip || !hasUsage) && !bytes.Equal(out, stream) {
			t.Fatalf("strip %t, usage %t: the client got\n%q\nof\n%q", strip, hasUsage, out, stream)
		}
		if len(out) > len(stream) {
			t.Fatalf("the client got more than the model sent: %q", out)
		}
		if used := m.used(7); used < 0 || (hasUsage && used != u.Total()) {
			t.Fatalf("settled at %d tokens (usage %+v, %t)", used, u, hasUsage)
		}
	})
}
