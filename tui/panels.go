package tui

import (
	"fmt"
	"math"

	"github.com/charmbracelet/lipgloss"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/runfiles"
)

// seriesDef is one line of a chart: how to read it from a Sample.
type seriesDef struct {
	name  string
	color lipgloss.Color
	// get returns the value and whether the Sample measured it.
	get func(s *runfiles.Sample) (float64, bool)
	// format prints the current value (without unit).
	format func(v float64) string
}

// panelDef is one dashboard panel: a chart with a legend, or (series empty)
// a custom body such as the large P0 number.
type panelDef struct {
	id     string
	title  string
	unit   string // printed after each current value
	series []seriesDef
	// gateway is true when the series come from the gateway scrape, so a
	// stale scrape marks the panel STALE.
	gateway bool
	// ownScale gives each series its own 0..max scale (mixed units).
	ownScale bool
	// fixedTop, when > 0, is the scale top (e.g. 100 for percentages).
	fixedTop float64
	// minTop is the smallest scale top, so noise near zero stays flat.
	minTop float64
	// extra returns legend lines below the series (may be nil); a tab
	// splits a line's label from its value, which is never cut (extraLine).
	extra func(s *runfiles.Sample) []string
	// onePageOnly panels are left out when the panels fold into pages
	// (the header carries their number instead).
	onePageOnly bool
}

func client(f func(s *runfiles.Sample) float64) func(s *runfiles.Sample) (float64, bool) {
	return func(s *runfiles.Sample) (float64, bool) { return f(s), true }
}

// measuredCapacity is the nodes' capacity, measured only: a tick that took
// part of it from a node's configured service time (too few requests
// finished on it to measure one) is a gap and "—", never a guess drawn as
// a measurement.
func measuredCapacity(s *runfiles.Sample) (float64, bool) {
	return s.CapacityRPS, s.CapacityConfiguredRPS == 0
}

func gateway(f func(s *runfiles.Sample) float64) func(s *runfiles.Sample) (float64, bool) {
	return func(s *runfiles.Sample) (float64, bool) {
		if s.GatewayStale {
			return 0, false
		}
		return f(s), true
	}
}

// admittedLatency reads a latency of the admitted requests that ended in
// the Sample's tick: not measured when none ended (the Sample then holds
// 0 and no histogram), so a tick without answers is a gap and "—", not a
// latency of 0 ms.
func admittedLatency(f func(s *runfiles.Sample) float64) func(s *runfiles.Sample) (float64, bool) {
	return func(s *runfiles.Sample) (float64, bool) {
		return f(s), s.AdmittedHist != "" || s.AdmittedP99Ms > 0
	}
}

func mapVal(m map[string]float64, k string) float64 { return m[k] }

// Colours of the series, chosen to read on dark and light terminals.
const (
	cCyan    = lipgloss.Color("6")
	cMagenta = lipgloss.Color("5")
	cYellow  = lipgloss.Color("3")
	cGreen   = lipgloss.Color("2")
	cRed     = lipgloss.Color("1")
	cBlue    = lipgloss.Color("4")
	cWhite   = lipgloss.Color("7")
	cGrey    = lipgloss.Color("8")
	cOrange  = lipgloss.Color("208")
)

var shedReasons = []struct{ key, label string }{
	{wire.ShedOverload.String(), "overload"},
	{wire.ShedQueueFull.String(), "queue full"},
	{wire.ShedQueueTimeout.String(), "q timeout"},
	{wire.ShedRateLimit.String(), "ratelimit"},
	{wire.ShedBudget.String(), "budget"},
}

var reasonColors = []lipgloss.Color{cRed, cOrange, cYellow, cMagenta, cBlue}

var priorityColors = map[string]lipgloss.Color{wire.PriorityP0: cGreen, wire.PriorityP1: cYellow, wire.PriorityP2: cRed}

// panels lists the dashboard's panels in display order (pages fold in this
// order on small terminals).
var panels = buildPanels()

func buildPanels() []panelDef {
	shedByReason := make([]seriesDef, 0, len(shedReasons))
	for i, r := range shedReasons {
		k := r.key
		shedByReason = append(shedByReason, seriesDef{name: r.label, color: reasonColors[i],
			get: gateway(func(s *runfiles.Sample) float64 { return mapVal(s.ShedRPSByReason, k) })})
	}
	var shedByPrio, success []seriesDef
	for _, p := range load.Priorities {
		p := p
		shedByPrio = append(shedByPrio, seriesDef{name: p, color: priorityColors[p],
			get: gateway(func(s *runfiles.Sample) float64 { return mapVal(s.ShedRPSByPriority, p) })})
		success = append(success, seriesDef{name: p, color: priorityColors[p], format: fmtPct,
			get: client(func(s *runfiles.Sample) float64 { return successValue(s.ByPriority[p]) })})
	}
	return []panelDef{
		{id: "lag", title: "scheduler lag p99", unit: "ms", gateway: true, minTop: 1, series: []seriesDef{
			{name: "probe", color: cCyan, get: gateway(func(s *runfiles.Sample) float64 { return s.LagProbeP99Ms })},
			{name: "sched", color: cMagenta, get: gateway(func(s *runfiles.Sample) float64 { return s.SchedLatencyP99Ms })},
			{name: "GC pause", color: cYellow, get: gateway(func(s *runfiles.Sample) float64 { return s.GCPauseP99Ms })},
		}},
		{id: "queue", title: "queue · in-flight · limit · slots", gateway: true, minTop: 1, series: []seriesDef{
			{name: "limit", color: cWhite, format: fmtCount, get: gateway(func(s *runfiles.Sample) float64 { return s.ConcurrencyLimit })},
			{name: "slots", color: cMagenta, format: fmtCount, get: client(liveSlots)},
			{name: "in-flight", color: cCyan, format: fmtCount, get: gateway(func(s *runfiles.Sample) float64 { return s.Inflight })},
			{name: "queue", color: cYellow, format: fmtCount, get: gateway(func(s *runfiles.Sample) float64 { return s.QueueDepth })},
		}},
		{id: "rps", title: "req/s offered · admitted · good", unit: "/s", minTop: 1, series: []seriesDef{
			{name: "offered", color: cWhite, get: client(func(s *runfiles.Sample) float64 { return s.OfferedRPS })},
			{name: "admitted", color: cCyan, get: gateway(func(s *runfiles.Sample) float64 { return s.AdmittedRPS })},
			{name: "goodput", color: cGreen, get: client(func(s *runfiles.Sample) float64 { return s.GoodputRPS })},
			{name: "capacity", color: cMagenta, get: measuredCapacity},
		}, extra: upstreamRates},
		{id: "shed_reason", title: "shed by reason", unit: "/s", gateway: true, minTop: 1, series: shedByReason},
		{id: "shed_priority", title: "shed by priority", unit: "/s", gateway: true, minTop: 1, series: shedByPrio},
		{id: "success", title: "success by priority", unit: "%", fixedTop: 100, series: success},
		{id: "latency", title: "admitted latency", unit: "ms", minTop: 1, series: []seriesDef{
			{name: "p99", color: cRed, get: admittedLatency(func(s *runfiles.Sample) float64 { return s.AdmittedP99Ms })},
			{name: "p50", color: cCyan, get: admittedLatency(func(s *runfiles.Sample) float64 { return s.AdmittedP50Ms })},
		}},
		{id: "gateway", title: "gateway heap · goroutines", gateway: true, ownScale: true, minTop: 1, series: []seriesDef{
			{name: "heap MB", color: cBlue, get: gateway(func(s *runfiles.Sample) float64 { return s.GatewayHeap() / (1 << 20) })},
			{name: "goroutines", color: cGreen, get: gateway(func(s *runfiles.Sample) float64 { return s.Goroutines })},
		}, extra: func(s *runfiles.Sample) []string {
			return []string{fmt.Sprintf("OOM kills\t%d", s.OOMKills)}
		}},
		{id: "p0", title: "P0 success", onePageOnly: true},
	}
}

// liveSlots is the true slot count beside the limit: the slots the live
// nodes report (levee_fakemodel_slots of each node whose scrape is
// current), so a node lost or cut to fewer slots shows at once.
func liveSlots(s *runfiles.Sample) float64 {
	t := 0.0
	for _, n := range s.Nodes {
		if n.Up {
			t += n.Slots
		}
	}
	return t
}

// upstreamRates is the retries and hedges the gateways sent to the nodes
// per second (the panel's unit), "—" while the gateway scrape is stale.
// Offered counts requests; the clients' own retries (client_retry) come on
// top of it and are shown first when a lesson has them.
func upstreamRates(s *runfiles.Sample) []string {
	var lines []string
	if s.ClientRetriesTotal > 0 || s.ClientRetriesDeniedTotal > 0 {
		lines = append(lines, "+ client retries\t"+fmtNum(s.ClientRetryRPS))
	}
	if s.GatewayStale {
		return append(lines, "retry — hedge —")
	}
	return append(lines, "retry "+fmtNum(s.RetryRPS)+" hedge\t"+fmtNum(s.HedgeRPS))
}

// fmtNum prints a value in at most 5 cells (6 when negative): 0.4, 3.1,
// 87, 1.2k, 120k, 3.4M. A value is scaled by the unit it fits in once
// rounded, so 999,950 is "1.0M", never "1000.0k".
func fmtNum(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	if v == 0 {
		return "0"
	}
	sign, a := "", math.Abs(v)
	if v < 0 {
		sign = "-"
	}
	for _, u := range [...]struct {
		scale  float64
		suffix string
	}{{1, ""}, {1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {1e12, "T"}} {
		x := a / u.scale
		switch {
		case x < 9.95:
			return sign + fmt.Sprintf("%.1f", x) + u.suffix
		case x < 999.5:
			return sign + fmt.Sprintf("%.0f", x) + u.suffix
		}
	}
	return sign + "≫1P"
}

// fmtCount prints a count: a whole number under 10 without a decimal
// ("3 in flight", "8 slots", as the nodes row prints them; fmtNum's "3.0"
// read as a measurement finer than a count), anything else as fmtNum.
func fmtCount(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmtNum(v)
}

// fmtPct prints a percentage with two decimals, never rounding up to 100.
func fmtPct(v float64) string {
	if v >= 100 {
		return "100"
	}
	return fmt.Sprintf("%.2f", math.Floor(v*100)/100)
}
