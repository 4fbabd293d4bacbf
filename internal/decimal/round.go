// Package decimal rounds measured figures to a number of decimal places
// for the files a run leaves (samples.jsonl, summary.json).
package decimal

import "math"

// Round returns v rounded half away from zero to digits decimal places.
// NaN and ±Inf are returned as they are, and so is a value too large for
// v × 10^digits to be finite (it has no fractional digits left to round):
// a finite figure never becomes infinite, which JSON cannot hold.
func Round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(digits))
	s := v * p
	if math.IsInf(s, 0) {
		return v
	}
	return math.Round(s) / p
}
