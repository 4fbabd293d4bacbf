package runfiles

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/lab/load"
)

func histMs(h *hdrhistogram.Histogram, q float64) float64 {
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	return round(float64(h.ValueAtPercentile(q))/1000, 3)
}

// SubTotals returns end − start: the totals of a recording that started
// while the generator ran. Histograms are subtracted bucket by bucket.
func SubTotals(end, start load.Totals) load.Totals {
	d := load.Totals{
		Elapsed:     end.Elapsed - start.Elapsed,
		TargetRPS:   end.TargetRPS,
		Outstanding: end.Outstanding,
		Offered:     end.Offered - start.Offered,
		Outcomes:    map[string]uint64{},
		ByPriority:  map[string]load.PriorityTotals{},
		Admitted:    subHist(end.Admitted, start.Admitted),
	}
	if d.Elapsed > 0 {
		d.AchievedRPS = float64(d.Offered) / d.Elapsed.Seconds()
	}
	for _, o := range load.Outcomes {
		d.Outcomes[o] = end.Outcomes[o] - start.Outcomes[o]
	}
	for _, p := range load.Priorities {
		e, s := end.ByPriority[p], start.ByPriority[p]
		pt := load.PriorityTotals{Offered: e.Offered - s.Offered, Outcomes: map[string]uint64{}, Latency: subHist(e.Latency, s.Latency)}
		for _, o := range load.Outcomes {
			pt.Outcomes[o] = e.Outcomes[o] - s.Outcomes[o]
		}
		d.ByPriority[p] = pt
	}
	return d
}

func subHist(end, start *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if end == nil {
		return nil
	}
	if start == nil {
		return hdrhistogram.Import(end.Export())
	}
	es, ss := end.Export(), start.Export()
	if len(es.Counts) != len(ss.Counts) {
		return hdrhistogram.Import(es)
	}
	for i := range es.Counts {
		es.Counts[i] -= ss.Counts[i]
		if es.Counts[i] < 0 {
			es.Counts[i] = 0
		}
	}
	return hdrhistogram.Import(es)
}

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
