package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Colours: a series keeps its colour in every run; runs differ by dash.
const (
	cGrey   = "#8a8a8a"
	cBlue   = "#4e79a7"
	cGreen  = "#3d8b37"
	cCap    = "#6b6b6b"
	cP0     = "#14325c"
	cP1     = "#e8872b"
	cP2     = "#a66fa0"
	cTeal   = "#5ba8a0"
	cRed    = "#d1453b"
	cOrange = "#e8872b"
	cBrown  = "#9c755f"
	cGold   = "#c9a227"
	cSlots  = "#5b9a55"
)

// runDashes are the runs' line styles: A solid, B dashed, C dotted, D dash-dot.
var runDashes = []string{"", "7 4", "2 3", "9 3 2 3"}

// seriesSpec names a frame series on a chart.
type seriesSpec struct {
	key, name, color string
	width            float64
	area             bool
}

// chartSpec is one chart of the page.
type chartSpec struct {
	id, title, unit, note string
	tall                  bool
	fixedMax              float64 // >0: the y axis ends here
	oom                   bool
	optional              bool // drawn only when a series has data (Redis)
	series                []seriesSpec
}

var chartSpecs = []chartSpec{
	{id: "success", title: "Success rate by priority", unit: "%", tall: true, fixedMax: 100,
		note: "ok / finished, per interval",
		series: []seriesSpec{
			{key: "success.P0", name: "P0", color: cP0, width: 3.5},
			{key: "success.P1", name: "P1", color: cP1, width: 1.5},
			{key: "success.P2", name: "P2", color: cP2, width: 1.5},
		}},
	{id: "throughput", title: "Requests per second", unit: "req/s",
		note: "offered: arrivals scheduled · admitted: let through by the gateways, counted when admitted · goodput: ok within the client deadline · shaded: the nodes' capacity",
		series: []seriesSpec{
			{key: "capacity", name: "capacity", color: cCap, width: 1, area: true},
			{key: "offered", name: "offered", color: cGrey, width: 1.5},
			{key: "admitted", name: "admitted", color: cBlue, width: 1.5},
			{key: "goodput", name: "goodput", color: cGreen, width: 2.5},
		}},
	{id: "latency", title: "Latency", unit: "ms",
		note: "from the intended arrival time; percentiles of each interval's merged histograms",
		series: []seriesSpec{
			{key: "latency.admitted_p50", name: "admitted p50", color: cTeal, width: 1.5},
			{key: "latency.admitted_p99", name: "admitted p99", color: cBlue, width: 1.5},
			{key: "latency.p0_p99", name: "P0 p99", color: cP0, width: 2.5},
		}},
	{id: "timing", title: "Gateway scheduling", unit: "ms",
		note: "worst recent-window p99 reported in each interval",
		series: []seriesSpec{
			{key: "lag_probe_p99", name: "lag probe p99", color: cRed, width: 2},
			{key: "sched_latency_p99", name: "runtime sched latency p99", color: cOrange, width: 1.5},
			{key: "gc_pause_p99", name: "GC pause p99", color: cBrown, width: 1.5},
		}},
	{id: "queue", title: "Queue, in flight and limits", unit: "requests",
		note: "gateway wait queue and in-flight · the ai concurrency limit · shaded: the live nodes' slots",
		series: []seriesSpec{
			{key: "live_slots", name: "node slots (live)", color: cSlots, width: 1, area: true},
			{key: "queue_depth", name: "queue depth", color: cGold, width: 1.5},
			{key: "inflight", name: "in flight", color: cBlue, width: 1.5},
			{key: "concurrency_limit", name: "concurrency limit", color: cRed, width: 2},
		}},
	{id: "shed_reason", title: "Shed per second by reason", unit: "req/s",
		note: "as the clients saw them",
		series: []seriesSpec{
			{key: "shed.ratelimit", name: "ratelimit", color: cBrown, width: 1.5},
			{key: "shed.overload", name: "overload", color: cRed, width: 1.5},
			{key: "shed.queue_full", name: "queue_full", color: cGold, width: 1.5},
			{key: "shed.queue_timeout", name: "queue_timeout", color: cTeal, width: 1.5},
			{key: "shed.budget", name: "budget", color: cP2, width: 1.5},
		}},
	{id: "shed_priority", title: "Shed per second by priority", unit: "req/s",
		note: "the gateways' levee_shed_total",
		series: []seriesSpec{
			{key: "shed_prio.P0", name: "P0", color: cP0, width: 2.5},
			{key: "shed_prio.P1", name: "P1", color: cP1, width: 1.5},
			{key: "shed_prio.P2", name: "P2", color: cP2, width: 1.5},
		}},
	{id: "failed", title: "Timeouts, errors and fallbacks per second", unit: "req/s",
		note: "outcomes that are neither ok nor a shed",
		series: []seriesSpec{
			{key: "failed.timeout", name: "timeout", color: cRed, width: 1.5},
			{key: "failed.error", name: "error", color: cBrown, width: 1.5},
			{key: "failed.fallback", name: "fallback", color: cTeal, width: 1.5},
			{key: "failed.generator_dropped", name: "generator dropped", color: cGrey, width: 1.5},
		}},
	{id: "memory", title: "Gateway memory", unit: "MB", oom: true,
		note: "largest in each interval · RSS and heap: the largest gateway's (the per-gateway pod memory limit applies to its RSS) · summed RSS: all gateways together · ✕ an OOM kill",
		series: []seriesSpec{
			{key: "rss_sum_mb", name: "RSS, gateways summed", color: cGrey, width: 1},
			{key: "rss_mb", name: "RSS, largest gateway", color: cOrange, width: 2},
			{key: "heap_mb", name: "heap, largest gateway", color: cBlue, width: 1.5},
			{key: "heap_sum_mb", name: "heap, gateways summed", color: cBlue, width: 1},
		}},
	{id: "goroutines", title: "Gateway goroutines", unit: "",
		note: "largest in each interval",
		series: []seriesSpec{
			{key: "goroutines", name: "goroutines", color: cP2, width: 1.5},
		}},
	{id: "nodes", title: "Model nodes up and ejected", unit: "nodes",
		note: "a node counts as up while its process runs and its last scrape answered · ejected: a gateway took it out of rotation (outlier detection; probing counts as ejected)",
		series: []seriesSpec{
			{key: "nodes_ejected", name: "nodes ejected", color: cRed, width: 1.5},
			{key: "nodes_up", name: "nodes up", color: cSlots, width: 2},
		}},
	{id: "upstream", title: "Retries and hedges per second", unit: "/s",
		note: "upstream attempts the gateways sent beyond the first: retries (within the retry budget) and hedged attempts",
		series: []seriesSpec{
			{key: "hedges", name: "hedges sent", color: cTeal, width: 1.5},
			{key: "retries", name: "retries sent", color: cOrange, width: 2},
		}},
	{id: "redis", title: "Redis fallbacks per second", unit: "/s", optional: true,
		note: "rate limit decisions made without the shared store",
		series: []seriesSpec{
			{key: "redis_fallback", name: "decided locally", color: cRed, width: 2},
		}},
}

// buildCharts draws every chart spec over the runs' frames.
func buildCharts(specs []chartSpec, frames []frame, runs []*Run, redis bool) []chart {
	var out []chart
	for _, sp := range specs {
		if sp.id == "redis" && !redis {
			continue
		}
		c := chart{ID: sp.id, Title: sp.title, Unit: sp.unit, Note: sp.note, Tall: sp.tall, OOM: sp.oom}
		var keep []seriesSpec
		for _, ss := range sp.series {
			if anyData(frames, ss.key) {
				keep = append(keep, ss)
			}
		}
		if len(keep) == 0 {
			if sp.optional {
				continue
			}
			// Nothing but zeros (no sheds at all): one flat line says so.
			keep = sp.series[len(sp.series)-1:]
			c.Note = joinNote(c.Note, "none in any run")
		}
		for ri, f := range frames {
			for _, ss := range keep {
				v, ok := f.series[ss.key]
				if !ok {
					continue
				}
				c.Series = append(c.Series, series{Key: ss.key, Name: ss.name, Color: ss.color, Run: ri, Width: ss.width, Area: ss.area, Values: v})
			}
		}
		// Caveats about the runs' data, each said once with the runs it
		// applies to ("runs A, B: …").
		var cav caveats
		for ri, f := range frames {
			switch {
			case sp.id == "latency" && !f.hasHist:
				cav.add(ri, "no latency histograms (recorded before they were kept)")
			case sp.id == "throughput" && !f.hasAdmittedTotal:
				cav.add(ri, "recorded before the gateways' admission count: the admitted line is the admitted requests that ended")
			case sp.id == "success" && !f.hasFinished:
				cav.add(ri, "recorded before per-interval counts: the success line is the sampler's trailing 3 s rate")
			case sp.id == "memory" && !f.rssPerGateway:
				cav.add(ri, "recorded before the largest gateway's RSS was kept: only the gateways' sum is known, and no per-gateway memory limit is drawn against it")
			}
			if sp.id == "memory" && !f.heapPerGateway {
				cav.add(ri, "recorded before the largest gateway's heap was kept: the heap line is the gateways' sum")
			}
			if text := summedNote(sp.id, f.gateways); text != "" {
				cav.add(ri, text)
			}
			if sp.id == "throughput" && f.capacityConfigured {
				cav.add(ri, "the capacity is a gap where a live node had too few requests finished (< 50 in ~5 s) to measure its service time; only its configured one was known")
			}
		}
		for _, cv := range cav {
			c.Note = joinNote(c.Note, cv.String())
		}
		c.Lines = chartLines(sp.id, runs)
		dataMax, peak := robustMax(c.Series)
		c.YMax = yDomain(sp, dataMax, c.Lines, runs)
		if peak > c.YMax && sp.fixedMax == 0 {
			c.Note = joinNote(c.Note, fmt.Sprintf("brief peaks up to %s are cut at the top", fmtAxis(peak, sp.unit)))
		}
		for i := range c.Lines {
			c.Lines[i].OffScale = c.Lines[i].Y > c.YMax
		}
		out = append(out, c)
	}
	return out
}

// summedNote says, for a run of gateways gateways (0: unknown), that chart
// id draws a sum over them: the sampler adds up the gateways' queue,
// in-flight, concurrency limit and goroutines (runfiles.Sample), so a run
// of four gateways reads four times one gateway's limit. "" for one
// gateway, whose sum is its own, and for the other charts.
func summedNote(id string, gateways int) string {
	var what string
	switch id {
	case "queue":
		what = "queue, in flight and concurrency limit"
	case "goroutines":
		what = "goroutines"
	default:
		return ""
	}
	switch gateways {
	case 1:
		return ""
	case 0:
		return what + " summed over its gateways (how many is not recorded)"
	}
	return fmt.Sprintf("%s summed over its %d gateways", what, gateways)
}

// robustMax is the top the data needs and its true peak. A few points far
// above the rest (a stalled machine's catch-up burst) would flatten the
// chart: when the peak is over 2.5× the 98th percentile, the top follows
// the percentile and the page says the peaks are cut.
func robustMax(ss []series) (top, peak float64) {
	var all []float64
	for _, s := range ss {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				all = append(all, v)
				peak = math.Max(peak, v)
			}
		}
	}
	if len(all) < 20 {
		return peak, peak
	}
	sort.Float64s(all)
	q := all[len(all)*98/100]
	if q > 0 && peak > 2.5*q {
		return 1.3 * q, peak
	}
	return peak, peak
}

// anyData is whether any run has a finite non-zero value of the series.
func anyData(frames []frame, key string) bool {
	for _, f := range frames {
		for _, x := range f.series[key] {
			if !math.IsNaN(x) && x != 0 {
				return true
			}
		}
	}
	return false
}

// caveat is a remark about the data of some runs.
type caveat struct {
	text string
	runs []int
}

// String is "run A: text" or "runs A, C: text".
func (c caveat) String() string {
	labels := make([]string, len(c.runs))
	for i, r := range c.runs {
		labels[i] = runLabel(r)
	}
	if len(labels) == 1 {
		return "run " + labels[0] + ": " + c.text
	}
	return "runs " + strings.Join(labels, ", ") + ": " + c.text
}

// caveats keeps each remark once, in the order first made, with every run
// it was made for.
type caveats []caveat

func (cs *caveats) add(run int, text string) {
	for i := range *cs {
		if (*cs)[i].text == text {
			(*cs)[i].runs = append((*cs)[i].runs, run)
			return
		}
	}
	*cs = append(*cs, caveat{text: text, runs: []int{run}})
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + " · " + b
}

// yDomain is the top of a chart's y axis: a nice number above the data and
// the lines that lie within 3× of it (farther lines are named at the top
// instead of flattening the data).
func yDomain(sp chartSpec, dataMax float64, lines []hline, runs []*Run) float64 {
	if sp.fixedMax > 0 {
		return sp.fixedMax
	}
	if sp.id == "nodes" {
		n := 0
		for _, r := range runs {
			n = max(n, len(r.Samples[len(r.Samples)-1].Nodes))
		}
		if n > 0 {
			return float64(n)
		}
	}
	top := dataMax
	for _, l := range lines {
		if l.Y <= 3*math.Max(dataMax, 1e-9) {
			top = math.Max(top, l.Y)
		}
	}
	if top <= 0 {
		return 1
	}
	// A value near the largest float64 (a corrupt or hostile line of
	// samples.jsonl) would round the top up to +Inf, which JSON cannot
	// hold and the axis loop never passes: the top stops at maxAxis and
	// the chart says its peaks are cut.
	return niceCeil(math.Min(top, maxAxis) * 1.05)
}

// maxAxis is the highest top a y axis gets (niceCeil of it × 1.05 stays
// finite, and so do its gridlines).
const maxAxis = 1e300

// niceCeil rounds v up to 1, 2, 2.5, 5 or 10 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func runLabel(i int) string { return string(rune('A' + i)) }
