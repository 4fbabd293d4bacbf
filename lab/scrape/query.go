package scrape

import (
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Series is one sample of a counter, gauge or untyped metric.
type Series struct {
	Labels map[string]string
	Value  float64
}

// matches reports whether m carries every label in match with that value.
// A match value "" also matches a missing label, as in PromQL.
func matches(m *dto.Metric, match map[string]string) bool {
	for k, want := range match {
		got := ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k {
				got = lp.GetValue()
				break
			}
		}
		if got != want {
			return false
		}
	}
	return true
}

func labelValue(m *dto.Metric, name string) (string, bool) {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue(), true
		}
	}
	return "", false
}

// value returns the scalar value of a counter, gauge or untyped metric. A
// histogram or summary has none (false).
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// seriesOf returns the scalar series of name matching match. For a histogram
// or summary family "x", the names "x_count" and "x_sum" give its count and
// sum series.
func (f Families) seriesOf(name string, match map[string]string) []Series {
	var out []Series
	if mf, ok := f[name]; ok {
		for _, m := range mf.GetMetric() {
			if !matches(m, match) {
				continue
			}
			if v, ok := value(m); ok {
				out = append(out, Series{Labels: labelMap(m), Value: v})
			}
		}
		return out
	}
	for _, suffix := range []string{"_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		mf, ok := f[base]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !matches(m, match) {
				continue
			}
			var v float64
			switch {
			case m.Histogram != nil && suffix == "_count":
				v = float64(m.GetHistogram().GetSampleCount())
			case m.Histogram != nil:
				v = m.GetHistogram().GetSampleSum()
			case m.Summary != nil && suffix == "_count":
				v = float64(m.GetSummary().GetSampleCount())
			case m.Summary != nil:
				v = m.GetSummary().GetSampleSum()
			default:
				continue
			}
			out = append(out, Series{Labels: labelMap(m), Value: v})
		}
	}
	return out
}

func labelMap(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

// Series returns every scalar series of name whose labels include match.
func (f Families) Series(name string, match map[string]string) []Series {
	return f.seriesOf(name, match)
}

// Has reports whether the scrape has a family called name.
func (f Families) Has(name string) bool { _, ok := f[name]; return ok }

// Sum adds the values of every series of name whose labels include match
// (nil matches all); 0 when none does.
func (f Families) Sum(name string, match map[string]string) float64 {
	s := 0.0
	for _, x := range f.seriesOf(name, match) {
		s += x.Value
	}
	return s
}

// Value returns the value of the one series of name whose labels include
// labels. It reports false when no series matches, or when more than one
// does (the question was ambiguous).
func (f Families) Value(name string, labels map[string]string) (float64, bool) {
	s := f.seriesOf(name, labels)
	if len(s) != 1 {
		return 0, false
	}
	return s[0].Value, true
}

// Max returns the largest value among the series of name whose labels
// include match, and false when none does.
func (f Families) Max(name string, match map[string]string) (float64, bool) {
	s := f.seriesOf(name, match)
	if len(s) == 0 {
		return 0, false
	}
	m := math.Inf(-1)
	for _, x := range s {
		m = math.Max(m, x.Value)
	}
	return m, true
}

// ByLabel sums the series of name by the value of one label. Series without
// the label are summed under "".
func (f Families) ByLabel(name, label string) map[string]float64 {
	return f.ByLabelMatch(name, label, nil)
}

// ByLabelMatch is ByLabel over the series whose labels include match.
func (f Families) ByLabelMatch(name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, x := range f.seriesOf(name, match) {
		out[x.Labels[label]] += x.Value
	}
	return out
}

// HistogramQuantile estimates the q-quantile (0 ≤ q ≤ 1) of histogram name
// over every series whose labels include match, merging their buckets, by
// linear interpolation within the bucket as Prometheus's histogram_quantile
// does. It reports false when the family is missing, is not a histogram, has
// no observations, or q is out of range. A quantile in the +Inf bucket
// returns the highest finite bound. Merged series should share bucket bounds,
// as series of one histogram do.
func (f Families) HistogramQuantile(name string, q float64, match map[string]string) (float64, bool) {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return 0, false
	}
	mf, ok := f[name]
	if !ok {
		return 0, false
	}
	cum := map[float64]float64{} // upper bound → cumulative count
	total := 0.0
	found := false
	for _, m := range mf.GetMetric() {
		if m.Histogram == nil || !matches(m, match) {
			continue
		}
		found = true
		h := m.GetHistogram()
		total += float64(h.GetSampleCount())
		for _, b := range h.GetBucket() {
			cum[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	if !found || total == 0 {
		return 0, false
	}
	bounds := make([]float64, 0, len(cum)+1)
	for b := range cum {
		bounds = append(bounds, b)
	}
	if _, ok := cum[math.Inf(1)]; !ok {
		cum[math.Inf(1)] = total
		bounds = append(bounds, math.Inf(1))
	}
	sort.Float64s(bounds)
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range bounds {
		c := cum[b]
		if c >= rank && c > prevCount {
			if math.IsInf(b, 1) {
				if i == 0 {
					return 0, false
				}
				return prevBound, true
			}
			lo := prevBound
			if i == 0 && b <= 0 {
				return b, true
			}
			return lo + (b-lo)*(rank-prevCount)/(c-prevCount), true
		}
		prevBound, prevCount = b, c
	}
	return prevBound, true
}
