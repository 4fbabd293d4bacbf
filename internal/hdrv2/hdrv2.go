// Package hdrv2 writes and reads HdrHistogram's standard V2 compressed
// encoding (the base64 "HISTFAAA…" text that HdrHistogram's log tools
// read), which samples.jsonl uses for its per-tick latency histograms.
//
// It exists for speed: hdrhistogram-go builds a new zlib writer (about
// 800 KB) for every Encode and a new zlib reader for every decode, which at
// four histograms a tick cost the lab's sampler milliseconds and a report of
// a long run most of its time. An Encoder and a Decoder keep theirs. The
// output is byte-for-byte the library's (its tests check it), so either
// side may be swapped for the other.
package hdrv2

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The V2 cookies, with the word size (0x10) the Go and Java writers set.
const (
	encodingCookie           = hdrhistogram.V2EncodingCookieBase | 0x10
	compressedEncodingCookie = hdrhistogram.V2CompressedEncodingCookieBase | 0x10
	headerSize               = 40
)

// geometry is HdrHistogram's bucket layout for a lowest discernible value
// and a number of significant digits: how a value maps to a flat counts
// index and back.
type geometry struct {
	unitMagnitude, halfMagnitude int32
	halfCount                    int32
	mask                         int64
}

func newGeometry(lowest int64, digits int) (geometry, error) {
	if digits < 0 || digits > 5 {
		return geometry{}, fmt.Errorf("hdrv2: %d significant digits (want 0..5)", digits)
	}
	lowest = max(lowest, 1)
	largest := 2 * math.Pow10(digits)
	countMag := int32(math.Ceil(math.Log2(largest)))
	half := max(countMag, 1) - 1
	unit := int32(63 - bits.LeadingZeros64(uint64(lowest)))
	if unit+half > 61 {
		return geometry{}, fmt.Errorf("hdrv2: lowest value %d too large for %d digits", lowest, digits)
	}
	return geometry{unitMagnitude: unit, halfMagnitude: half, halfCount: 1 << half,
		mask: int64(1<<(half+1)-1) << unit}, nil
}

// index is the flat counts index of value v.
func (g geometry) index(v int64) int64 {
	bucket := int64(64-bits.LeadingZeros64(uint64(v|g.mask))) - int64(g.unitMagnitude) - int64(g.halfMagnitude+1)
	sub := v >> uint(bucket+int64(g.unitMagnitude))
	return (bucket+1)<<uint(g.halfMagnitude) + sub - int64(g.halfCount)
}

// countsLen is the length of the counts array of a histogram of this
// geometry whose highest trackable value is highest, computed as
// hdrhistogram.New computes it: an index at or beyond it is out of range.
func (g geometry) countsLen(highest int64) int64 {
	smallestUntrackable := int64(g.halfCount) << uint(g.unitMagnitude+1)
	buckets := int64(1)
	for smallestUntrackable <= highest {
		if smallestUntrackable > math.MaxInt64/2 {
			buckets++
			break
		}
		smallestUntrackable <<= 1
		buckets++
	}
	return (buckets + 1) * int64(g.halfCount)
}

// value is the lowest value of the bucket at a flat counts index.
func (g geometry) value(idx int64) int64 {
	bucket := idx>>uint(g.halfMagnitude) - 1
	sub := idx&int64(g.halfCount-1) + int64(g.halfCount)
	if bucket < 0 {
		sub -= int64(g.halfCount)
		bucket = 0
	}
	return sub << uint(bucket+int64(g.unitMagnitude))
}

// appendZigZag appends v in HdrHistogram's ZigZag LEB128: seven bits a
// byte, and a ninth byte, when needed, with all eight.
func appendZigZag(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for i := 0; i < 8; i++ {
		if u>>7 == 0 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f|0x80))
		u >>= 7
	}
	return append(b, byte(u))
}

// readZigZag reads one value written by appendZigZag.
func readZigZag(b []byte) (int64, int, error) {
	var u uint64
	for i := 0; i < 9; i++ {
		if i >= len(b) {
			return 0, 0, errors.New("hdrv2: truncated payload")
		}
		c := b[i]
		if i == 8 {
			u |= uint64(c) << 56
			return int64(u>>1) ^ -int64(u&1), 9, nil
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return int64(u>>1) ^ -int64(u&1), i + 1, nil
		}
	}
	panic("unreachable")
}

// Encoder encodes histograms, reusing its buffers and zlib writer. Not
// safe for concurrent use.
type Encoder struct {
	inner []byte // header + payload
	zbuf  bytes.Buffer
	zw    *zlib.Writer
	out   []byte
}

// Encode returns p in the V2 compressed encoding, exactly as
// (*hdrhistogram.PackedHistogram).Encode would; "" for nil or empty.
func (e *Encoder) Encode(p *hdrhistogram.PackedHistogram) (string, error) {
	if p == nil || p.TotalCount() == 0 {
		return "", nil
	}
	g, err := newGeometry(p.LowestTrackableValue(), int(p.SignificantFigures()))
	if err != nil {
		return "", err
	}
	b := append(e.inner[:0], make([]byte, headerSize)...)
	var next int64
	p.ForEachBucket(func(v, c int64) bool {
		idx := g.index(v)
		switch gap := idx - next; {
		case gap == 1:
			b = appendZigZag(b, 0)
		case gap > 1:
			b = appendZigZag(b, -gap)
		}
		b = appendZigZag(b, c)
		next = idx + 1
		return true
	})
	binary.BigEndian.PutUint32(b[0:], uint32(encodingCookie))
	binary.BigEndian.PutUint32(b[4:], uint32(len(b)-headerSize))
	binary.BigEndian.PutUint32(b[8:], 0) // normalizing index offset
	binary.BigEndian.PutUint32(b[12:], uint32(int32(p.SignificantFigures())))
	binary.BigEndian.PutUint64(b[16:], uint64(p.LowestTrackableValue()))
	binary.BigEndian.PutUint64(b[24:], uint64(p.HighestTrackableValue()))
	binary.BigEndian.PutUint64(b[32:], math.Float64bits(1))
	e.inner = b

	e.zbuf.Reset()
	if e.zw == nil {
		e.zw, _ = zlib.NewWriterLevel(&e.zbuf, zlib.BestCompression) // a valid level: no error
	} else {
		e.zw.Reset(&e.zbuf)
	}
	if _, err := e.zw.Write(b); err != nil {
		return "", err
	}
	if err := e.zw.Close(); err != nil {
		return "", err
	}
	raw := make([]byte, 8, 8+e.zbuf.Len())
	binary.BigEndian.PutUint32(raw[0:], uint32(compressedEncodingCookie))
	binary.BigEndian.PutUint32(raw[4:], uint32(e.zbuf.Len()))
	raw = append(raw, e.zbuf.Bytes()...)
	e.out = base64.StdEncoding.AppendEncode(e.out[:0], raw)
	return string(e.out), nil
}

// Decoder merges encoded histograms into a dense histogram, reusing its
// buffers and zlib reader. Not safe for concurrent use.
type Decoder struct {
	raw   []byte
	src   bytes.Reader
	zr    io.ReadCloser
	inner bytes.Buffer
}

// MergeInto adds the counts of enc (V2 compressed, base64) to dst, each at
// its bucket's lowest value. A histogram of another geometry merges value
// by value. A malformed enc (a count past the counts array its header
// defines included, as the library's decoder refuses it), or one holding a
// value dst cannot hold, is an error and leaves dst as it was.
func (d *Decoder) MergeInto(dst *hdrhistogram.Histogram, enc string) error {
	var err error
	d.raw, err = base64.StdEncoding.AppendDecode(d.raw[:0], []byte(enc))
	if err != nil {
		return fmt.Errorf("hdrv2: %w", err)
	}
	if len(d.raw) < 8 {
		return errors.New("hdrv2: too short")
	}
	if c := int32(binary.BigEndian.Uint32(d.raw[0:])) &^ 0xf0; c != hdrhistogram.V2CompressedEncodingCookieBase {
		return fmt.Errorf("hdrv2: cookie %#x is not V2 compressed", c)
	}
	n := binary.BigEndian.Uint32(d.raw[4:])
	if uint64(n) > uint64(len(d.raw)-8) {
		return errors.New("hdrv2: compressed length beyond the data")
	}
	d.src.Reset(d.raw[8 : 8+n])
	if d.zr == nil {
		if d.zr, err = zlib.NewReader(&d.src); err != nil {
			d.zr = nil
			return fmt.Errorf("hdrv2: %w", err)
		}
	} else if err := d.zr.(zlib.Resetter).Reset(&d.src, nil); err != nil {
		return fmt.Errorf("hdrv2: %w", err)
	}
	d.inner.Reset()
	if _, err := d.inner.ReadFrom(d.zr); err != nil {
		return fmt.Errorf("hdrv2: %w", err)
	}
	b := d.inner.Bytes()
	if len(b) < headerSize {
		return errors.New("hdrv2: header too short")
	}
	if c := int32(binary.BigEndian.Uint32(b[0:])) &^ 0xf0; c != hdrhistogram.V2EncodingCookieBase {
		return fmt.Errorf("hdrv2: inner cookie %#x is not V2", c)
	}
	payload := b[headerSize:]
	if l := binary.BigEndian.Uint32(b[4:]); uint64(l) > uint64(len(payload)) {
		return errors.New("hdrv2: payload length beyond the data")
	} else {
		payload = payload[:l]
	}
	g, err := newGeometry(int64(binary.BigEndian.Uint64(b[16:])), int(int32(binary.BigEndian.Uint32(b[12:]))))
	if err != nil {
		return err
	}
	// Check the whole payload, and that dst can hold every value, before
	// touching dst.
	var found [64]bucket
	list, err := g.buckets(found[:0], payload, int64(binary.BigEndian.Uint64(b[24:])))
	if err != nil {
		return err
	}
	dg, err := newGeometry(dst.LowestTrackableValue(), int(dst.SignificantFigures()))
	if err != nil {
		return err
	}
	dstLen := dg.countsLen(dst.HighestTrackableValue())
	for _, bk := range list {
		if dg.index(bk.v) >= dstLen {
			return fmt.Errorf("hdrv2: value %d beyond the destination's highest trackable value %d", bk.v, dst.HighestTrackableValue())
		}
	}
	for _, bk := range list {
		if err := dst.RecordValues(bk.v, bk.n); err != nil {
			return fmt.Errorf("hdrv2: %w", err)
		}
	}
	return nil
}

// bucket is one decoded count: the lowest value of its bucket and how many.
type bucket struct{ v, n int64 }

// buckets appends the non-zero counts of a V2 payload of geometry g and
// highest trackable value highest to list. Like the library's decoder, it
// refuses a zero run or a count past the end of the counts array those
// define (a corrupt payload, whose values would otherwise overflow).
func (g geometry) buckets(list []bucket, payload []byte, highest int64) ([]bucket, error) {
	n := g.countsLen(highest)
	var idx int64
	for pos := 0; pos < len(payload); {
		c, k, err := readZigZag(payload[pos:])
		if err != nil {
			return nil, err
		}
		pos += k
		switch {
		case c < 0:
			if c == math.MinInt64 || -c > n-idx {
				return nil, fmt.Errorf("hdrv2: corrupt payload: zero run of %d at index %d beyond %d counts", -c, idx, n)
			}
			idx -= c
		case c > 0:
			if idx >= n {
				return nil, fmt.Errorf("hdrv2: corrupt payload: count at index %d beyond %d counts", idx, n)
			}
			list = append(list, bucket{g.value(idx), c})
			idx++
		default:
			idx++
		}
	}
	return list, nil
}
