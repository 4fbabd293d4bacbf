package htmlreport

import (
	"encoding/json"
	"math"
	"strconv"
)

// values is one series: NaN is a gap (nothing measured in that interval).
// It marshals compactly, a gap as null, at most five significant digits.
type values []float64

func (v values) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(v)*6)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendNum(b, x)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads null as a gap.
func (v *values) UnmarshalJSON(b []byte) error {
	var raw []*float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*v = make(values, len(raw))
	for i, x := range raw {
		if x == nil {
			(*v)[i] = math.NaN()
		} else {
			(*v)[i] = *x
		}
	}
	return nil
}

// appendNum appends x with at most five significant digits, null for NaN or
// an infinity.
func appendNum(b []byte, x float64) []byte {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return append(b, "null"...)
	}
	x = roundSig(x, 5)
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.AppendInt(b, int64(x), 10)
	}
	return strconv.AppendFloat(b, x, 'f', -1, 64)
}

// roundSig rounds x to n significant digits.
func roundSig(x float64, n int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, float64(n-1)-math.Floor(math.Log10(math.Abs(x))))
	if r := math.Round(x*p) / p; !math.IsInf(r, 0) {
		return r
	}
	return x // rounding up near the largest float64 would overflow
}

// nan returns n gaps.
func nan(n int) values {
	v := make(values, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// maxOf is the largest finite value (0 when there is none).
func (v values) max() float64 {
	m := 0.0
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) && x > m {
			m = x
		}
	}
	return m
}

// points counts the finite values.
func (v values) points() int {
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			n++
		}
	}
	return n
}
