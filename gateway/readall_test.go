package gateway

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllAsIoReadAll: readAll reads what io.ReadAll reads, whatever
// the length it is told (right, short, long, unknown, over the limit)
// and however the reader splits its reads — of unknown length in one
// piece or several (readPieces), ending inside one or at its end.
func TestReadAllAsIoReadAll(t *testing.T) {
	for _, data := range []string{strings.Repeat("0123456789", 1000), strings.Repeat("x", 2*pieceSize), strings.Repeat("0123456789", 10000)} {
		readAllAsIoReadAll(t, data)
	}
}

func readAllAsIoReadAll(t *testing.T, data string) {
	t.Helper()
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
				t.Errorf("%d bytes told %d, %s: %d bytes, %v; want %d bytes, %v", len(data), size, name, len(got), gerr, len(want), werr)
			}
		}
	}
}

// pieceReader reads data at most max bytes a Read, as a chunked HTTP body
// of unknown length comes.
type pieceReader struct {
	data []byte
	max  int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.max)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// BenchmarkReadAnswerUnknownLength: an answer of unknown length (chunked,
// no Content-Length) read whole under routes.embeddings.answer_limit_bytes'
// default, 16 KB a read, by io.ReadAll (what readAll did for it before:
// growing pieces, then one copy into a buffer of its length — about twice
// its bytes) and by readAll. B/op over the answer's size is the cost per
// byte; compare the two sub-benchmarks of one run.
func BenchmarkReadAnswerUnknownLength(b *testing.B) {
	const limit = 32 << 20
	for _, size := range []int{4 << 10, 256 << 10, 2600 << 10} {
		data := bytes.Repeat([]byte("0.0123456789,"), size/13)
		for _, read := range []struct {
			name string
			f    func(io.Reader) ([]byte, error)
		}{
			{"io.ReadAll", io.ReadAll},
			{"readAll", func(r io.Reader) ([]byte, error) { return readAll(r, -1, limit) }},
		} {
			b.Run(fmt.Sprintf("%s/%dKB", read.name, size>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					got, err := read.f(io.LimitReader(&pieceReader{data: data, max: 16 << 10}, limit+1))
					if err != nil || len(got) != len(data) {
						b.Fatalf("%d bytes, %v", len(got), err)
					}
				}
			})
		}
	}
}
