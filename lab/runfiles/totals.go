package runfiles

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func histMs(h *hdrhistogram.Histogram, q float64) float64 {
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	return round(float64(h.ValueAtPercentile(q))/1000, 3)
}

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
