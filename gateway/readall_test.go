package gateway

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllAsIoReadAll: readAll reads what io.ReadAll reads, whatever
// the length it is told (right, short, long, unknown, over the limit)
// and however the reader splits its reads.
func TestReadAllAsIoReadAll(t *testing.T) {
	data := strings.Repeat("0123456789", 1000)
	for _, size := range []int64{-1, 0, 1, 9999, 10000, 10001, 20000, 1 << 30} {
		for name, r := range map[string]func() io.Reader{
			"whole":    func() io.Reader { return strings.NewReader(data) },
			"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(data)) },
			"eof with data": func() io.Reader {
				return iotest.DataErrReader(strings.NewReader(data))
			},
			"error": func() io.Reader {
				return io.MultiReader(strings.NewReader(data), iotest.ErrReader(io.ErrUnexpectedEOF))
			},
		} {
			got, gerr := readAll(r(), size, 1<<20)
			want, werr := io.ReadAll(r())
			if !bytes.Equal(got, want) || gerr != werr {
				t.Errorf("size %d, %s: %d bytes, %v; want %d bytes, %v", size, name, len(got), gerr, len(want), werr)
			}
		}
	}
}
