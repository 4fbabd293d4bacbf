package hdrv2

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// shapes are histograms of the kinds the lab records, and edge cases.
func shapes() map[string]*hdrhistogram.PackedHistogram {
	rng := rand.New(rand.NewPCG(1, 2))
	out := map[string]*hdrhistogram.PackedHistogram{}
	add := func(name string, lowest, highest int64, digits int, fill func(h *hdrhistogram.Histogram)) {
		h := hdrhistogram.New(lowest, highest, digits)
		fill(h)
		p := hdrhistogram.NewPacked(lowest, highest, digits)
		p.MergeFrom(h)
		out[name] = p
	}
	add("one value", 1, 600e6, 3, func(h *hdrhistogram.Histogram) { _ = h.RecordValue(1234) })
	add("zero-adjacent", 1, 600e6, 3, func(h *hdrhistogram.Histogram) {
		_ = h.RecordValue(1)
		_ = h.RecordValue(3) // a single empty bucket between
		_ = h.RecordValue(5000)
	})
	add("lognormal", 1, 600e6, 3, func(h *hdrhistogram.Histogram) {
		for range 500 {
			_ = h.RecordValue(int64(200e3 * math.Exp(rng.NormFloat64()*0.6)))
		}
	})
	add("sheds and timeouts", 1, 600e6, 3, func(h *hdrhistogram.Histogram) {
		for range 400 {
			_ = h.RecordValue(int64(300 + rng.IntN(3000)))
		}
		_ = h.RecordValues(2_000_000, 1<<40) // a count that needs the long encoding
		_ = h.RecordValue(600e6)
	})
	add("other geometry", 1000, 3_600_000_000, 2, func(h *hdrhistogram.Histogram) {
		for range 300 {
			_ = h.RecordValue(int64(1000 + rng.IntN(1e9)))
		}
	})
	return out
}

func TestEncodeMatchesLibrary(t *testing.T) {
	var e Encoder
	for name, p := range shapes() {
		want, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second time with reused buffers
			got, err := e.Encode(p)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got != string(want) {
				t.Errorf("%s: encoding differs from the library's:\n got %.80s…\nwant %.80s…", name, got, want)
			}
		}
	}
	if s, err := e.Encode(nil); s != "" || err != nil {
		t.Errorf("Encode(nil) = %q, %v", s, err)
	}
}

func TestDecodeMatchesLibrary(t *testing.T) {
	var d Decoder
	for name, p := range shapes() {
		enc, _ := p.Encode()
		want := hdrhistogram.New(1, 3_600_000_000, 3)
		lib, err := hdrhistogram.DecodePacked(enc)
		if err != nil {
			t.Fatal(err)
		}
		lib.MergeInto(want)
		got := hdrhistogram.New(1, 3_600_000_000, 3)
		// Twice: merging adds.
		for range 2 {
			if err := d.MergeInto(got, string(enc)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		lib.MergeInto(want)
		if !got.Equals(want) {
			t.Errorf("%s: decoded %d values, p50 %d p99 %d; the library %d, %d, %d", name,
				got.TotalCount(), got.ValueAtPercentile(50), got.ValueAtPercentile(99),
				want.TotalCount(), want.ValueAtPercentile(50), want.ValueAtPercentile(99))
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	var d Decoder
	good, _ := shapes()["lognormal"].Encode()
	dst := hdrhistogram.New(1, 600e6, 3)
	for name, s := range map[string]string{
		"not base64":       "HISTFAAA!!!",
		"empty":            "",
		"truncated":        string(good[:len(good)/2]),
		"another cookie":   "AAAAAAAAAAA=",
		"one byte changed": string(good[:20]) + "A" + string(good[21:]),
	} {
		if err := d.MergeInto(dst, s); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "hdrv2: ") {
			t.Errorf("%s: error %q does not name the package", name, err)
		}
		if dst.TotalCount() != 0 {
			t.Fatalf("%s: a rejected histogram changed dst", name)
		}
	}
	// Still works after errors.
	if err := d.MergeInto(dst, string(good)); err != nil || dst.TotalCount() != 500 {
		t.Fatalf("after errors: %v, %d values", err, dst.TotalCount())
	}
}

func TestZigZag(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 1 << 20, -(1 << 40), 1<<55 + 7, math.MaxInt64, math.MinInt64 + 1} {
		b := appendZigZag(nil, v)
		got, n, err := readZigZag(b)
		if err != nil || got != v || n != len(b) {
			t.Errorf("%d: read %d (%d of %d bytes), %v", v, got, n, len(b), err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	p := shapes()["lognormal"]
	var e Encoder
	b.ReportAllocs()
	for b.Loop() {
		_, _ = e.Encode(p)
	}
}

func BenchmarkLibraryEncode(b *testing.B) {
	p := shapes()["lognormal"]
	b.ReportAllocs()
	for b.Loop() {
		_, _ = p.Encode()
	}
}

func BenchmarkDecode(b *testing.B) {
	enc, _ := shapes()["lognormal"].Encode()
	s := string(enc)
	dst := hdrhistogram.New(1, 600e6, 3)
	var d Decoder
	b.ReportAllocs()
	for b.Loop() {
		dst.Reset()
		_ = d.MergeInto(dst, s)
	}
}

func BenchmarkLibraryDecode(b *testing.B) {
	enc, _ := shapes()["lognormal"].Encode()
	dst := hdrhistogram.New(1, 600e6, 3)
	b.ReportAllocs()
	for b.Loop() {
		dst.Reset()
		p, _ := hdrhistogram.DecodePacked(enc)
		p.MergeInto(dst)
	}
}

// crafted is a V2 compressed histogram (1..600e6, 3 digits: 21504 counts)
// with a hand-written payload.
func crafted(payload []byte) string {
	b := make([]byte, headerSize)
	binary.BigEndian.PutUint32(b[0:], uint32(encodingCookie))
	binary.BigEndian.PutUint32(b[4:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[12:], 3)
	binary.BigEndian.PutUint64(b[16:], 1)
	binary.BigEndian.PutUint64(b[24:], 600e6)
	binary.BigEndian.PutUint64(b[32:], math.Float64bits(1))
	b = append(b, payload...)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(b)
	_ = zw.Close()
	raw := binary.BigEndian.AppendUint32(nil, uint32(compressedEncodingCookie))
	raw = binary.BigEndian.AppendUint32(raw, uint32(z.Len()))
	return base64.StdEncoding.EncodeToString(append(raw, z.Bytes()...))
}

// A zero run past the counts array the header defines is corrupt, as the
// library's decoder says; it once wrapped the value's shift and recorded
// the counts at 0.
func TestDecodeRejectsIndexBeyondCounts(t *testing.T) {
	const counts = 21504
	var d Decoder
	for _, tc := range []struct {
		name string
		skip int64
		ok   bool
	}{
		{"last count", counts - 1, true},
		{"one past", counts, false},
		{"far past", 1 << 20, false},
		{"huge run", 1<<40 - 10, false},
	} {
		enc := crafted(appendZigZag(appendZigZag(nil, -tc.skip), 5))
		_, libErr := hdrhistogram.Decode([]byte(enc))
		dst := hdrhistogram.New(1, 3_600_000_000, 3)
		err := d.MergeInto(dst, enc)
		if (err == nil) != tc.ok || (libErr == nil) != tc.ok {
			t.Errorf("%s: error %v, the library's %v; want ok=%v", tc.name, err, libErr, tc.ok)
		}
		if !tc.ok && dst.TotalCount() != 0 {
			t.Errorf("%s: a rejected histogram recorded %d values (max %d)", tc.name, dst.TotalCount(), dst.Max())
		}
	}
}

// A histogram holding a value dst cannot hold is refused whole: no value
// of it is merged.
func TestDecodeOutOfRangeLeavesDst(t *testing.T) {
	h := hdrhistogram.New(1, 3_600_000_000, 3)
	_ = h.RecordValue(1000)
	_ = h.RecordValue(3_000_000_000)
	p := hdrhistogram.NewPacked(1, 3_600_000_000, 3)
	p.MergeFrom(h)
	enc, _ := p.Encode()
	dst := hdrhistogram.New(1, 600e6, 3)
	var d Decoder
	if err := d.MergeInto(dst, string(enc)); err == nil {
		t.Fatal("a value beyond dst's range merged without error")
	}
	if dst.TotalCount() != 0 {
		t.Errorf("the refused histogram left %d values in dst", dst.TotalCount())
	}
	// The highest value dst tracks still merges.
	h.Reset()
	_ = h.RecordValue(600e6)
	p = hdrhistogram.NewPacked(1, 3_600_000_000, 3)
	p.MergeFrom(h)
	enc, _ = p.Encode()
	if err := d.MergeInto(dst, string(enc)); err != nil || dst.TotalCount() != 1 {
		t.Errorf("600e6 into 1..600e6: %v, %d values", err, dst.TotalCount())
	}
}
