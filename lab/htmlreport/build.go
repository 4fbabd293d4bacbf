package htmlreport

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/levee-lab/levee/lab/runfiles"
)

// MaxRuns is how many runs one report overlays (each has its line style).
const MaxRuns = 4

// build turns runs into the page model.
func build(runs []*Run) (*page, error) {
	if len(runs) == 0 {
		return nil, errors.New("html report: no runs")
	}
	if len(runs) > MaxRuns {
		return nil, fmt.Errorf("html report: %d runs; at most %d overlay readably", len(runs), MaxRuns)
	}
	p := &page{}
	tls := make([]timeline, len(runs))
	span, tick := 0.0, 0.0
	for i, r := range runs {
		if r == nil || len(r.Samples) == 0 {
			return nil, fmt.Errorf("html report: run %d has no samples", i+1)
		}
		tls[i] = newTimeline(r)
		span = math.Max(span, tls[i].end)
		tick = math.Max(tick, tls[i].tick)
	}
	p.Interval = chooseInterval(span, tick)
	p.XMax = span
	frames := make([]frame, len(runs))
	redis := false
	for i, r := range runs {
		frames[i] = computeFrame(r, tls[i], p.Interval)
		if frames[i].badHist > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("run %s: %d latency histograms did not decode and are left out", runLabel(i), frames[i].badHist))
		}
		if r.Summary != nil {
			for _, e := range r.Summary.FaultStepErrors {
				p.Notes = append(p.Notes, fmt.Sprintf("run %s: fault step failed: %s", runLabel(i), e))
			}
			if w := r.Summary.WriteErrors; w != nil {
				p.Notes = append(p.Notes, fmt.Sprintf("run %s: recording incomplete: %s", runLabel(i), w))
			}
		}
		if (r.Info != nil && r.Info.Resolved.Redis != "") || anyData(frames[i:i+1], "redis_fallback") {
			redis = true
		}
		p.Runs = append(p.Runs, newRunView(i, r, tls[i], frames[i]))
	}
	p.Title = pageTitle(runs)
	p.Charts = buildCharts(chartSpecs, frames, runs, redis)
	for i := range p.Charts {
		if p.Charts[i].ID == "success" {
			p.Charts[i].Headline = p0Headline(runs)
		}
	}
	p.Geom = geom{L: padL, R: padR}
	p.Figures = figuresTable(runs)
	p.Figures.Note = gatewayNote(runs)
	p.Tiles = tiles(p.Figures)
	p.Checks = checksTable(runs)
	p.Predictions = predictionsOf(runs, p.Runs)
	return p, nil
}

func pageTitle(runs []*Run) string {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = runName(r)
	}
	if len(runs) == 1 {
		if t := runTitle(runs[0]); t != "" {
			return t
		}
		return names[0]
	}
	return strings.Join(names, " vs ")
}

func runName(r *Run) string {
	if r.Summary != nil && r.Summary.Name != "" {
		return r.Summary.Name
	}
	if r.Info != nil && r.Info.Name != "" {
		return r.Info.Name
	}
	return filepath.Base(r.Dir)
}

func runTitle(r *Run) string {
	if r.Summary != nil && r.Summary.Title != "" {
		return r.Summary.Title
	}
	if r.Info != nil && r.Info.Experiment != nil {
		return r.Info.Experiment.Title
	}
	return ""
}

func newRunView(i int, r *Run, tl timeline, f frame) runView {
	v := runView{
		Label: runLabel(i), Name: runName(r), Title: runTitle(r), Folder: filepath.Base(filepath.Clean(r.Dir)),
		Started: tl.origin.UTC().Format(time.RFC3339), DurationS: roundSig(tl.end, 4),
		Partial: r.Partial, Dash: runDashes[i], X: f.x,
		Bands: []band{}, Narration: []mark{},
	}
	if r.Summary != nil {
		// The run's duration is the load's, as the key figures say; the
		// samples go on while requests in flight drain after it.
		if r.Summary.DurationS > 0 {
			v.DurationS = roundSig(r.Summary.DurationS, 4)
		}
		v.Quick, v.Ended = r.Summary.Quick, r.Summary.Ended
		v.Redis = redisLine(r.Summary.Redis)
		// A failed fault step fails the run (summary.json's pass), with
		// thresholds or without.
		if (len(r.Summary.Thresholds) > 0 || len(r.Summary.FaultStepErrors) > 0) && !r.Partial {
			pass := r.Summary.Pass
			v.Pass = &pass
		}
	}
	// Faults: each apply until the next revert of the same fault, by the
	// summary's rules (runfiles' fault windows): an apply while the
	// fault's band is open joins it; a revert with no band of the fault
	// yet is of a fault active when the recording began, a band from the
	// start; any other revert with no band open repeats one (ignored).
	open := map[string]int{}  // fault → index in v.Bands
	seen := map[string]bool{} // faults with a band
	down := map[string]int{}  // gateway → index of its outage band
	for _, e := range r.Events {
		x := roundSig(tl.x(e.Time), 6)
		switch e.Kind {
		case eventFaultApply:
			name := field(e, "fault")
			if name == "" {
				name = e.Detail
			}
			if j, ok := open[name]; ok {
				v.Bands[j].From = math.Min(v.Bands[j].From, x)
				continue
			}
			open[name], seen[name] = len(v.Bands), true
			v.Bands = append(v.Bands, band{Kind: "fault", Name: name, Detail: field(e, "detail"), From: x, To: tl.end, Open: true})
		case eventFaultRevert:
			name := field(e, "fault")
			if j, ok := open[name]; ok {
				v.Bands[j].To, v.Bands[j].Open = x, false
				delete(open, name)
			} else if !seen[name] {
				seen[name] = true
				v.Bands = append(v.Bands, band{Kind: "fault", Name: name, Detail: field(e, "detail"), From: 0, To: x})
			}
		case eventOOMKill:
			v.OOMKills = append(v.OOMKills, x)
			down[e.Detail] = len(v.Bands)
			v.Bands = append(v.Bands, band{Kind: "down", Name: e.Detail, Detail: "OOM-killed, restarting", From: x, To: tl.end, Open: true})
		case eventChildStart:
			if j, ok := down[e.Detail]; ok {
				v.Bands[j].To, v.Bands[j].Open = x, false
				delete(down, e.Detail)
			}
		case eventNarration:
			step := 0
			if s, ok := e.Fields["step"].(float64); ok {
				step = int(s)
			}
			v.Narration = append(v.Narration, mark{X: x, Step: step, Kind: field(e, "kind"), Text: e.Detail})
		}
	}
	// Nothing before the run's start or after its end: bands, narration
	// marks and OOM marks are clamped to the time axis (an event written
	// while the run drained, after its last sample, drew outside the chart).
	clamp := func(x float64) float64 { return math.Min(math.Max(x, 0), tl.end) }
	for j := range v.Bands {
		v.Bands[j].From = clamp(v.Bands[j].From)
		v.Bands[j].To = math.Min(math.Max(v.Bands[j].To, v.Bands[j].From), tl.end)
	}
	for j := range v.Narration {
		v.Narration[j].X = clamp(v.Narration[j].X)
	}
	for j := range v.OOMKills {
		v.OOMKills[j] = clamp(v.OOMKills[j])
	}
	return v
}

// field is a string field of an event ("" when absent).
func field(e event, k string) string {
	s, _ := e.Fields[k].(string)
	return s
}

// p0Headline is each run's P0 success over the whole run.
func p0Headline(runs []*Run) []string {
	var out []string
	for i, r := range runs {
		v, ok := prio("P0")(r)
		if !ok {
			continue
		}
		s := "P0 " + fmtFigure(v, "pct")
		if len(runs) > 1 {
			s = runLabel(i) + " " + s
		}
		out = append(out, s)
	}
	return out
}

// tileFigures are the figures of the headline tiles: seed 003's table
// (P0 success, lag, OOM kills) and what the nodes delivered.
var tileFigures = []string{"P0 success", "goodput", "admitted p99", "gateway lag p99", "gateway max RSS", "OOM kills"}

func tiles(t table) []tile {
	var out []tile
	for _, name := range tileFigures {
		for _, r := range t.Rows {
			if r.Label != name {
				continue
			}
			tl := tile{Label: r.Label, Values: r.Cells}
			if n := len(r.Diffs); n > 0 {
				tl.Trend = r.Diffs[n-1].Trend
			}
			out = append(out, tl)
		}
	}
	return out
}

// redisLine says which Redis a run used, its fallbacks, its failovers and
// how close the global limit held; "" without Redis.
func redisLine(rs redisSummary) string {
	if rs.Kind == "" || rs.Kind == "off" {
		return ""
	}
	s := rs.Kind
	if rs.Addr != "" {
		s += " " + rs.Addr
	}
	fb := runfiles.NotFinite
	if finite(rs.Fallbacks) {
		fb = grouped(rs.Fallbacks)
	}
	s += ", " + fb + " local decisions"
	for _, f := range rs.Failovers {
		s += ", failover " + f.String()
	}
	return s
}
