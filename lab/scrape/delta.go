package scrape

import (
	"sort"
	"strings"
	"time"
)

// CounterDelta is how much a counter grew from prev to cur. A counter that
// went down was reset (its process restarted): the delta is then cur, the
// count since the restart.
func CounterDelta(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// RatePerSecond is CounterDelta over dt, in events per second; 0 when dt ≤ 0.
func RatePerSecond(prev, cur float64, dt time.Duration) float64 {
	if dt <= 0 {
		return 0
	}
	return CounterDelta(prev, cur) / dt.Seconds()
}

// signature identifies a series by its sorted labels.
func signature(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(l[k])
		b.WriteByte(0)
	}
	return b.String()
}

// SumDelta is how much the counter name grew since prev, summed over the
// series whose labels include match, each series reset-aware (CounterDelta).
// A series absent from prev counts from 0 (it appeared since). When prev is
// nil there is no baseline and the delta is 0.
func (f Families) SumDelta(prev Families, name string, match map[string]string) float64 {
	d := 0.0
	for _, v := range f.deltas(prev, name, "", match) {
		d += v
	}
	return d
}

// ByLabelDelta is SumDelta broken down by the value of label.
func (f Families) ByLabelDelta(prev Families, name, label string, match map[string]string) map[string]float64 {
	return f.deltas(prev, name, label, match)
}

func (f Families) deltas(prev Families, name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	if prev == nil {
		return out
	}
	before := map[string]float64{}
	for _, s := range prev.seriesOf(name, match) {
		before[signature(s.Labels)] = s.Value
	}
	for _, s := range f.seriesOf(name, match) {
		out[s.Labels[label]] += CounterDelta(before[signature(s.Labels)], s.Value)
	}
	return out
}
