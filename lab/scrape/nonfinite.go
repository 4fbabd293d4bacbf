package scrape

import (
	"fmt"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// NonFinite is one series of a scrape whose value was NaN, ±Inf, or
// beyond ±MaxValue.
type NonFinite struct {
	Name   string            // the metric family
	Labels map[string]string // the series' labels
	Value  float64           // the value read (NaN, ±Inf, or beyond ±MaxValue)
	// Carried is true when the series was kept at its previous scrape's
	// value (a counter, histogram or summary); false when it was removed.
	Carried bool
}

// String reads `levee_heap_bytes{class="ai"} = NaN`.
func (n NonFinite) String() string {
	keys := make([]string, 0, len(n.Labels))
	for k := range n.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(n.Name)
	if len(keys) > 0 {
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%q", k, n.Labels[k])
		}
		b.WriteByte('}')
	}
	fmt.Fprintf(&b, " = %v", n.Value)
	return b.String()
}

// MaxValue is the largest magnitude of a value the lab computes with. No
// count, byte size or duration comes near it, and it leaves room for what
// the sampler does with a value (seconds times 1000 for milliseconds,
// sums over series and gateways, rates over short ticks) to stay finite:
// 1e308 seconds would read as +Inf milliseconds, and two gauges of 1e308
// sum to +Inf.
const MaxValue = 1e300

// usable reports whether v is finite and within ±MaxValue.
func usable(v float64) bool { return math.Abs(v) <= MaxValue } // false for NaN and ±Inf

// DropNonFinite makes f hold usable values only (finite, within
// ±MaxValue), and returns what it changed, in family name order. A NaN or
// ±Inf (which the text format allows, and which no sample, summary or
// JSON line can hold), or a value beyond ±MaxValue (which the sampler's
// sums and unit changes would turn into ±Inf), is treated as missing for
// that one series, so the rest of the scrape is kept:
//
//   - a gauge or untyped series is removed from this scrape: the lab reads
//     it as absent (a gateway's figure is left out of the sums, a lone
//     gauge reads as unmeasured);
//   - a counter, or a histogram or summary whose sum is not usable, is
//     kept at its value in prev (the same process's previous scrape) when
//     prev has it usable: it grew by nothing in this scrape and its growth
//     shows at the next one, rather than the whole count being read as new
//     (a series absent from prev counts from 0, see SumDelta). Without
//     such a previous value it is removed.
//
// A family left without series is removed. Summary quantiles are left as
// they are: a summary with no observations reports NaN there, and the
// lab reads none.
func (f Families) DropNonFinite(prev Families) []NonFinite {
	names := make([]string, 0, len(f))
	for name := range f {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []NonFinite
	for _, name := range names {
		mf := f[name]
		var keep []*dto.Metric
		changed := false
		for _, m := range mf.GetMetric() {
			v, counting := metricValue(m)
			if usable(v) {
				keep = append(keep, m)
				continue
			}
			changed = true
			nf := NonFinite{Name: name, Labels: labelMap(m), Value: v}
			if counting {
				if pm := prev.sameSeries(name, m); pm != nil {
					if pv, _ := metricValue(pm); usable(pv) {
						keep = append(keep, pm)
						nf.Carried = true
					}
				}
			}
			out = append(out, nf)
		}
		if !changed {
			continue
		}
		if len(keep) == 0 {
			delete(f, name)
			continue
		}
		mf.Metric = keep
	}
	return out
}

// metricValue is the value of m the lab reads as a number: a counter's,
// gauge's or untyped value, or a histogram's or summary's sum (their
// counts are integers). counting is true for a counter, histogram or
// summary: a value that only grows within one process.
func metricValue(m *dto.Metric) (v float64, counting bool) {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), false
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), false
	case m.Histogram != nil:
		return m.GetHistogram().GetSampleSum(), true
	case m.Summary != nil:
		return m.GetSummary().GetSampleSum(), true
	}
	return 0, false
}

// sameSeries is the series of family name in f with m's labels (nil when
// there is none).
func (f Families) sameSeries(name string, m *dto.Metric) *dto.Metric {
	mf, ok := f[name]
	if !ok {
		return nil
	}
	sig := signature(labelMap(m))
	for _, pm := range mf.GetMetric() {
		if signature(labelMap(pm)) == sig {
			return pm
		}
	}
	return nil
}
