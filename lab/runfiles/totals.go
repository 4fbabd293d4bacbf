package runfiles

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/decimal"
)

func histMs(h *hdrhistogram.Histogram, q float64) float64 {
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	return round(float64(h.ValueAtPercentile(q))/1000, 3)
}

// round is decimal.Round: a finite figure stays finite.
func round(v float64, digits int) float64 { return decimal.Round(v, digits) }
