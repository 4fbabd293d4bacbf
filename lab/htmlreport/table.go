package htmlreport

import (
	"fmt"
	"math"
	"strings"

	"github.com/levee-lab/levee/lab/runfiles"
)

// figure is one row of the key-figures table.
type figure struct {
	label string
	kind  string // pct (0..1), ms, mb, rps, ratio, count, s
	// better: +1 higher is better, -1 lower is better, 0 neither.
	better int
	value  func(r *Run) (float64, bool) // false: not known for this run
	// latency figures are unknown for a killed run (never summarized).
	needsFull bool
}

func sv(f func(s *summary) float64) func(r *Run) (float64, bool) {
	return func(r *Run) (float64, bool) {
		if r.Summary == nil {
			return 0, false
		}
		return f(r.Summary), true
	}
}

func prio(p string) func(r *Run) (float64, bool) {
	return func(r *Run) (float64, bool) {
		if r.Summary == nil || r.Summary.ByPriority[p].Offered == 0 {
			return 0, false
		}
		return r.Summary.ByPriority[p].SuccessRate, true
	}
}

func outcomeCount(o string) func(r *Run) (float64, bool) {
	return sv(func(s *summary) float64 { return float64(s.Outcomes[o]) })
}

// figures are the rows of the seed-003 table and what a person comparing
// two runs asks next.
var figures = []figure{
	{label: "P0 success", kind: "pct", better: +1, value: prio("P0")},
	{label: "P1 success", kind: "pct", better: +1, value: prio("P1")},
	{label: "P2 success", kind: "pct", better: +1, value: prio("P2")},
	{label: "goodput", kind: "rps", better: +1, value: sv(func(s *summary) float64 { return s.GoodputRPS })},
	{label: "goodput ÷ usable capacity", kind: "ratio", better: +1, value: sv(func(s *summary) float64 { return s.GoodputRatio })},
	{label: "capacity", kind: "rps", value: sv(func(s *summary) float64 { return s.CapacityRPS })},
	{label: "offered", kind: "rps", value: sv(func(s *summary) float64 { return s.AchievedRPS })},
	{label: "admitted p99", kind: "ms", better: -1, needsFull: true, value: sv(func(s *summary) float64 { return s.AdmittedP99Ms })},
	{label: "P0 p99", kind: "ms", better: -1, needsFull: true, value: func(r *Run) (float64, bool) {
		if r.Summary == nil || r.Summary.ByPriority["P0"].Offered == 0 {
			return 0, false
		}
		return r.Summary.ByPriority["P0"].P99Ms, true
	}},
	{label: "gateway lag p99", kind: "ms", better: -1, value: sv(func(s *summary) float64 { return s.Gateway.LagP99Ms })},
	{label: "gateway sched latency p99", kind: "ms", better: -1, value: sv(func(s *summary) float64 { return s.Gateway.SchedLatencyP99Ms })},
	{label: "gateway max RSS", kind: "mb", better: -1, value: sv(func(s *summary) float64 { return s.Gateway.MaxRSSBytes / (1 << 20) })},
	{label: "gateway max heap", kind: "mb", better: -1, value: sv(func(s *summary) float64 { return s.Gateway.MaxHeapBytes / (1 << 20) })},
	{label: "OOM kills", kind: "count", better: -1, value: sv(func(s *summary) float64 { return float64(s.Gateway.OOMKills) })},
	{label: "shed", kind: "count", value: sv(func(s *summary) float64 {
		t := 0.0
		for _, n := range s.ShedByReason {
			t += float64(n)
		}
		return t
	})},
	{label: "timeout", kind: "count", better: -1, value: outcomeCount(outcomeTimeout)},
	{label: "error", kind: "count", better: -1, value: outcomeCount(outcomeError)},
	{label: "fallback", kind: "count", value: outcomeCount(outcomeFallback)},
	{label: "generator dropped", kind: "count", better: -1, value: outcomeCount(outcomeDropped)},
	{label: "unaccounted", kind: "count", better: -1, value: sv(func(s *summary) float64 { return math.Abs(float64(s.Unaccounted)) })},
	{label: "duration", kind: "s", value: sv(func(s *summary) float64 { return s.DurationS })},
}

// figuresTable is the key figures side by side; with several runs, each
// run after the first also shows its difference from the first.
func figuresTable(runs []*Run) table {
	var t table
	for _, f := range figures {
		rw := row{Label: f.label}
		vals := make([]float64, len(runs))
		known := make([]bool, len(runs))
		for i, r := range runs {
			vals[i], known[i] = f.value(r)
			if f.needsFull && r.Partial {
				known[i] = false
			}
			if known[i] {
				rw.Cells = append(rw.Cells, fmtFigure(vals[i], f.kind))
			} else {
				rw.Cells = append(rw.Cells, "–")
			}
		}
		for i := 1; i < len(runs); i++ {
			if !known[0] || !known[i] {
				rw.Diffs = append(rw.Diffs, diff{Text: ""})
				continue
			}
			rw.Diffs = append(rw.Diffs, diffOf(vals[0], vals[i], f.kind, f.better))
		}
		t.Rows = append(t.Rows, rw)
	}
	// Thresholds passed, per run.
	rw := row{Label: "thresholds passed"}
	for _, r := range runs {
		names := thresholdNames(r)
		if len(names) == 0 || r.Partial || r.Summary == nil {
			rw.Cells = append(rw.Cells, "–")
			continue
		}
		n := 0
		for _, name := range names {
			if r.Summary.Thresholds[name].Pass {
				n++
			}
		}
		rw.Cells = append(rw.Cells, fmt.Sprintf("%d of %d", n, len(names)))
	}
	// No difference, but a cell in each difference column all the same.
	for i := 1; i < len(runs); i++ {
		rw.Diffs = append(rw.Diffs, diff{})
	}
	t.Rows = append(t.Rows, rw)
	return t
}

// fmtFigure prints a key figure as report.txt prints its rows: one that
// is not a finite number (a killed run's rebuilt summary that overflowed)
// as runfiles.NotFinite, one from 1e15 on in e-notation.
func fmtFigure(v float64, kind string) string {
	if !finite(v) {
		return runfiles.NotFinite
	}
	switch kind {
	case "pct":
		return fixed(v*100, 2) + " %"
	case "ms":
		if v >= 100 {
			return grouped(v) + " ms"
		}
		return fixed(v, 1) + " ms"
	case "mb":
		return fixed(v, 1) + " MB"
	case "rps":
		return fixed(v, 1) + " /s"
	case "ratio":
		return fixed(v, 3)
	case "s":
		return fixed(v, 1) + " s"
	}
	return grouped(v)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fixed prints a finite v with prec decimals, from 1e15 on in e-notation
// (4 digits): the digits would fill the table without telling more.
func fixed(v float64, prec int) string {
	if math.Abs(v) >= 1e15 {
		return fmt.Sprintf("%.4g", v)
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// grouped prints a finite v as a whole number with commas, from 1e15 on
// as fixed does.
func grouped(v float64) string {
	if math.Abs(v) >= 1e15 {
		return fixed(v, 0)
	}
	return groupDigits(fmt.Sprintf("%.0f", v))
}

// diffOf is b − a in the figure's terms, with a factor for magnitudes;
// none (no text, no trend) when a, b or their difference is not a finite
// number: there is nothing to compare.
func diffOf(a, b float64, kind string, better int) diff {
	d := b - a
	if !finite(a) || !finite(b) || !finite(d) {
		return diff{}
	}
	var text string
	switch kind {
	case "pct":
		text = signed(fixed(math.Abs(d*100), 2), d) + " pp"
	case "ratio":
		text = signed(fixed(math.Abs(d), 3), d)
	case "count":
		text = signed(grouped(math.Abs(d)), d)
	default:
		unit := map[string]string{"ms": " ms", "mb": " MB", "rps": " /s", "s": " s"}[kind]
		text = signed(strings.TrimSuffix(fmtFigure(math.Abs(d), kind), unit), d) + unit
		if f := b / a; a > 0 && b > 0 && finite(f) {
			text += " (×" + fmtFactor(f) + ")"
		}
	}
	trend := ""
	if better != 0 {
		switch {
		case nearlyEqual(a, b, kind):
			trend = "same"
		case (d > 0) == (better > 0):
			trend = "better"
		default:
			trend = "worse"
		}
	}
	if nearlyEqual(a, b, kind) {
		text = "="
	}
	return diff{Text: text, Trend: trend}
}

// nearlyEqual is whether a and b print the same.
func nearlyEqual(a, b float64, kind string) bool { return fmtFigure(a, kind) == fmtFigure(b, kind) }

func signed(abs string, d float64) string {
	if d < 0 {
		return "−" + abs
	}
	return "+" + abs
}

func fmtFactor(f float64) string {
	switch {
	case f >= 10:
		return fixed(f, 0)
	case f >= 1:
		return trimZero(fmt.Sprintf("%.1f", f))
	}
	return trimZero(fmt.Sprintf("%.2f", f))
}

// groupDigits puts commas in long integers: 1234567 → 1,234,567.
func groupDigits(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// checksTable lists every threshold any run declared, with each run's
// value and result.
func checksTable(runs []*Run) checks {
	seen := map[string]bool{}
	for _, r := range runs {
		for _, n := range thresholdNames(r) {
			seen[n] = true
		}
	}
	var c checks
	for _, n := range sortedKeys(seen) {
		cr := checkRow{Metric: n, Doc: metricDoc[n]}
		for _, r := range runs {
			cell := checkCell{}
			expr, pass := thresholdOf(r, n)
			if expr != "" {
				cell.Expr, cell.Pass = expr, pass
				if _, v, err := parseThreshold(n, expr); err == nil && strings.HasSuffix(n, "_bytes") {
					cell.Expr += fmt.Sprintf(" (%.1f MB)", v/(1<<20))
				}
				if r.Summary != nil {
					if t, ok := r.Summary.Thresholds[n]; ok {
						cell.Value, cell.Note = fmtMetricOf(n, t.Value), t.Note
					}
				}
				if cell.Value == "" {
					cell.Value = "not evaluated"
				}
			}
			cr.Cells = append(cr.Cells, cell)
		}
		c.Rows = append(c.Rows, cr)
	}
	return c
}

// fmtMetricOf prints a threshold metric's value, byte sizes in MB.
func fmtMetricOf(name string, v float64) string {
	if strings.HasSuffix(name, "_bytes") && !math.IsNaN(v) && !math.IsInf(v, 0) {
		return fmt.Sprintf("%.1f MB", v/(1<<20))
	}
	return fmtMetric(v)
}

func fmtMetric(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "never"
	case math.IsNaN(v):
		return "n/a"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return groupDigits(fmt.Sprintf("%.0f", v))
	}
	return fmt.Sprintf("%.4g", v)
}

// gatewayNote says whose the gateway figures of the runs of several
// gateways are: the lag and scheduling latency p99 are the worst
// gateway's (the sampler keeps the largest), the max RSS and heap the
// largest gateway's, or the gateways' sum for a run recorded before the
// largest gateway's was kept (runfiles.Sample.GatewayRSS, GatewayHeap).
// "" when every run had one gateway, whose figures they simply are.
func gatewayNote(runs []*Run) string {
	var cav caveats
	for i, r := range runs {
		n := runGateways(r)
		if n == 1 {
			continue
		}
		who := "several gateways" // their counts are in the queue chart's note
		if n == 0 {
			who = "an unknown number of gateways"
		}
		one, sum := "the largest gateway's", "the gateways' sum"
		rss, heap := one, one
		if !perGatewayRSS(r) {
			rss = sum
		}
		if !perGatewayHeap(r) {
			heap = sum
		}
		mem := fmt.Sprintf("max RSS %s, max heap %s", rss, heap)
		if rss == heap {
			mem = "max RSS and heap " + rss
		}
		cav.add(i, fmt.Sprintf("%s; gateway lag and sched latency p99 are the worst gateway's, %s", who, mem))
	}
	var out string
	for _, c := range cav {
		out = joinNote(out, c.String())
	}
	return out
}
