package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/levee-lab/levee/lab/runfiles"
)

// thresholdOnChart says where a threshold metric is drawn: the chart, what
// the line is called and the factor from the metric's unit to the chart's.
type thresholdOnChart struct {
	chart, label string
	scale        float64
}

// thresholdCharts maps the threshold metrics that have a chart. The others
// (ratios, counts, checks) are in the thresholds table only.
var thresholdCharts = map[string]thresholdOnChart{
	"p0_success_rate":      {"success", "P0 success", 100},
	"p1_success_rate":      {"success", "P1 success", 100},
	"p2_success_rate":      {"success", "P2 success", 100},
	"goodput_rps":          {"throughput", "goodput", 1},
	"capacity_rps":         {"throughput", "capacity", 1},
	"admitted_p99_ms":      {"latency", "admitted p99", 1},
	"p0_p99_ms":            {"latency", "P0 p99", 1},
	"lag_p99_ms":           {"timing", "lag p99", 1},
	"sched_latency_p99_ms": {"timing", "sched latency p99", 1},
	"max_heap_bytes":       {"memory", "heap", 1.0 / (1 << 20)},
	"max_goroutines":       {"goroutines", "goroutines", 1},
}

// guardWatermarks are the overload guard's signals drawn on the timing
// chart, by their gateway config key.
var guardWatermarks = map[string]string{
	"lag_probe_p99_ms":     "lag",
	"sched_latency_p99_ms": "sched",
}

// chartLines are the horizontal lines of chart id over all runs: each run's
// thresholds on that chart (whole-run thresholds, drawn for reference), its
// pod memory limit, and its guard watermarks.
func chartLines(id string, runs []*Run) []hline {
	var out []hline
	for ri, r := range runs {
		for _, name := range thresholdNames(r) {
			on, ok := thresholdCharts[name]
			if !ok || on.chart != id {
				continue
			}
			expr, pass := thresholdOf(r, name)
			op, v, err := parseThreshold(name, expr)
			if err != nil {
				continue
			}
			l := hline{Kind: "threshold", Y: v * on.scale, Runs: []int{ri}, Pass: pass,
				Label: fmt.Sprintf("%s %s %s", on.label, opText(op), fmtAxis(v*on.scale, unitOf(id)))}
			out = append(out, l)
		}
		if id == "memory" {
			if mb := memoryLimitMB(r); mb > 0 {
				out = append(out, hline{Kind: "limit", Y: mb, Runs: []int{ri}, Label: fmt.Sprintf("pod memory limit %g MB", mb)})
			}
		}
		if id == "timing" && guardOn(r) {
			for _, key := range sortedKeys(guardWatermarks) {
				for _, lvl := range []string{"yellow", "red", "black"} {
					if v := guardLevel(r, key, lvl); v > 0 {
						out = append(out, hline{Kind: "watermark", Level: lvl, Y: v, Runs: []int{ri},
							Label: fmt.Sprintf("guard %s: %s %g ms", lvl, guardWatermarks[key], v)})
					}
				}
			}
		}
	}
	return mergeLines(out)
}

// mergeLines draws equal lines of several runs (the same limit, the same
// threshold with the same result) once.
func mergeLines(ls []hline) []hline {
	var out []hline
	for _, l := range ls {
		merged := false
		for i := range out {
			o := &out[i]
			if o.Kind == l.Kind && o.Level == l.Level && o.Label == l.Label && o.Y == l.Y && samePass(o.Pass, l.Pass) {
				o.Runs = append(o.Runs, l.Runs...)
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, l)
		}
	}
	return out
}

func samePass(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func opText(op string) string {
	switch op {
	case ">=":
		return "≥"
	case "<=":
		return "≤"
	case "!=":
		return "≠"
	case "==":
		return "="
	}
	return op
}

func unitOf(chartID string) string {
	for _, sp := range chartSpecs {
		if sp.id == chartID {
			return sp.unit
		}
	}
	return ""
}

// thresholdNames are a run's thresholds, sorted: the evaluated ones, or
// for a killed run those its experiment declared.
func thresholdNames(r *Run) []string {
	if r.Summary != nil && len(r.Summary.Thresholds) > 0 {
		return sortedKeys(r.Summary.Thresholds)
	}
	if r.Info != nil && r.Info.Experiment != nil {
		return sortedKeys(r.Info.Experiment.Thresholds)
	}
	return nil
}

// thresholdOf is a threshold's expression and result (nil when it was
// never evaluated).
func thresholdOf(r *Run, name string) (string, *bool) {
	if r.Summary != nil {
		if t, ok := r.Summary.Thresholds[name]; ok {
			p := t.Pass
			return t.Expr, &p
		}
	}
	if r.Info != nil && r.Info.Experiment != nil {
		return r.Info.Experiment.Thresholds[name], nil
	}
	return "", nil
}

// memoryLimitMB is the gateway's pod memory limit when the run's memory
// chart has a per-gateway RSS to read it against (perGatewayRSS): the
// limit is per gateway, so it is never drawn against the gateways' sum.
func memoryLimitMB(r *Run) float64 {
	if r.Info == nil || r.Info.Experiment == nil || !perGatewayRSS(r) {
		return 0
	}
	if g := r.Info.Experiment.Gateway; g.MemoryLimitMB > 0 {
		return g.MemoryLimitMB
	}
	return 0
}

// runGateways is how many gateways the run had; 0 when unknown (no
// run.json).
func runGateways(r *Run) int {
	if r.Info == nil {
		return 0
	}
	n := len(r.Info.Resolved.Gateways)
	if r.Info.Experiment != nil {
		n = max(n, r.Info.Experiment.Gateway.Count)
	}
	return max(n, 1)
}

// perGatewayRSS reports whether the run's samples give one gateway's RSS
// (the largest gateway's): they carry rss_max_bytes, or the run had one
// gateway, whose RSS the older rss_bytes sum then is.
func perGatewayRSS(r *Run) bool {
	return runfiles.PerGatewayRSS(r.Samples) || runGateways(r) == 1
}

// perGatewayHeap reports whether the run's samples give one gateway's
// heap (the largest gateway's): they carry heap_max_bytes, or the run had
// one gateway, whose heap the older heap_bytes sum then is.
func perGatewayHeap(r *Run) bool {
	return runfiles.PerGatewayHeap(r.Samples) || runGateways(r) == 1
}

// guardOn is whether the overload guard was on at any time of the run.
func guardOn(r *Run) bool {
	for _, s := range r.Samples {
		if s.Defenses["guard"] {
			return true
		}
	}
	return false
}

// guardLevel reads guard.<key>.<level> from the gateway config the run
// resolved (0 when absent or off).
func guardLevel(r *Run, key, level string) float64 {
	if r.Info == nil {
		return 0
	}
	g, _ := r.Info.Resolved.GatewayConfig["guard"].(map[string]any)
	k, _ := g[key].(map[string]any)
	v, _ := k[level].(float64)
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// fmtAxis formats a value in a chart's unit, short.
func fmtAxis(v float64, unit string) string {
	s := fmtShort(v)
	switch unit {
	case "%":
		return strings.TrimSuffix(s, " ") + " %"
	case "", "requests", "nodes":
		return s
	}
	return s + " " + unit
}

// fmtShort prints v in at most four characters of digits: 0.25, 12.5, 480,
// 1.2k, 35k, 1.5M.
func fmtShort(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "–"
	case a >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a >= 100 || a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return trimZero(fmt.Sprintf("%.1f", v))
	case a >= 1:
		return trimZero(fmt.Sprintf("%.2f", v))
	}
	return trimZero(fmt.Sprintf("%.3f", v))
}

func trimZero(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
