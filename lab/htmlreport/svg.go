package htmlreport

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Chart geometry in SVG user units; the SVG scales to its box.
const (
	svgW       = 640  // a chart in a two-column grid
	svgWideW   = 1300 // a chart across the page: the same text size
	svgH       = 200  // plot height plus margins, before the narration lane
	svgTallH   = 270
	padL       = 50
	padR       = 12
	padB       = 24
	laneH      = 13 // one run's row of narration marks above the plot
	labelPitch = 11 // least vertical distance between two labels
)

// labelBox is the room a label takes: from..to across, baseline y.
type labelBox struct{ from, to, y float64 }

// overlaps is true when the two labels would be drawn over each other
// (closer than 4 units across and labelPitch down).
func (a labelBox) overlaps(b labelBox) bool {
	return a.from < b.to+4 && b.from < a.to+4 && math.Abs(a.y-b.y) < labelPitch
}

// plot maps data to SVG coordinates for one chart.
type plot struct {
	w, h       float64
	top        float64 // the plot's top edge: below the narration lanes
	xMax, yMax float64
}

// newPlot lays out chart c: a tall chart is wide unless narrow is asked
// for (its second drawing, shown on narrow screens and in print).
func newPlot(pg *page, c chart, narrow bool) plot {
	p := plot{w: svgW, h: svgH, top: 6 + laneH*float64(len(pg.Runs)), xMax: pg.XMax, yMax: c.YMax}
	if c.Tall {
		p.w, p.h = svgWideW, svgTallH
		if narrow {
			p.w = svgW
		}
	}
	p.h += p.top
	return p
}

func (p plot) pw() float64 { return p.w - padL - padR }
func (p plot) ph() float64 { return p.h - p.top - padB }
func (p plot) X(x float64) float64 {
	if p.xMax <= 0 {
		return padL
	}
	return padL + x/p.xMax*p.pw()
}
func (p plot) Y(y float64) float64 {
	y = math.Min(y, p.yMax*1.02) // a value above the top stays at the edge
	return p.top + p.ph() - y/p.yMax*p.ph()
}

// f1 prints a coordinate with one decimal.
func f1(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// renderSVG draws chart ci of the page; narrow draws a tall chart at the
// width of the others.
func renderSVG(b *strings.Builder, pg *page, ci int, narrow bool) {
	c := pg.Charts[ci]
	p := newPlot(pg, c, narrow)
	clip := "clip-" + c.ID
	class := "chart"
	if c.Tall {
		clip += map[bool]string{true: "-narrow", false: "-wide"}[narrow]
		class += map[bool]string{true: " narrow-only", false: " wide-only"}[narrow]
	}
	fmt.Fprintf(b, `<svg class="%s" data-chart="%d" viewBox="0 0 %s %s" role="img" aria-label="%s">`, class, ci, f1(p.w), f1(p.h), html.EscapeString(c.Title))
	fmt.Fprintf(b, `<defs><clipPath id="%s"><rect x="%d" y="%s" width="%s" height="%s"/></clipPath></defs>`, clip, padL, f1(p.top), f1(p.pw()), f1(p.ph()))
	renderAxes(b, p, c)
	labs := lineLabels(p, pg, c)

	// Fault bands and outages of every run (equal ones once).
	b.WriteString(`<g class="bands" clip-path="url(#` + clip + `)">`)
	var taken []labelBox // the labels placed: the lines', then the bands'
	for _, l := range labs {
		taken = append(taken, l.box)
	}
	said := map[string]bool{} // band labels drawn
	for _, db := range drawnBands(pg) {
		x1, x2 := p.X(db.From), p.X(db.To)
		label := db.label
		fmt.Fprintf(b, `<rect class="band band-%s run-%d" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
			db.Kind, db.runs[0], f1(x1), f1(p.top), f1(math.Max(x2-x1, 1)), f1(p.ph()), html.EscapeString(label))
		// The label starts at the band's left edge, or ends at its right
		// edge when the band is near the end of the axis.
		lx, anchor := x1+3, ""
		w := textWidth(label, labelSize, true)
		box := labelBox{from: lx, to: lx + w}
		// A label that would run past the plot's right edge (where the
		// bands are clipped) ends at that edge instead.
		switch right := p.w - padR - 3; {
		case x1 > p.X(0)+0.75*p.pw():
			lx, anchor = math.Min(math.Max(x2, x1+1)-3, right), ` text-anchor="end"`
			box = labelBox{from: lx - w, to: lx}
		case lx+w > right:
			lx, anchor = right, ` text-anchor="end"`
			box = labelBox{from: lx - w, to: lx}
		}
		// The first row from the top where the label overlaps no other
		// label, a band's or a line's. A label already drawn for an
		// earlier band (a gateway OOM-killed nine times) is repeated only
		// where the top row has room: stacked down the plot it would hide
		// the data, and the band's tooltip and the faults table name it.
		row := 0
		for ; ; row++ {
			box.y = p.top + 10 + float64(row)*labelPitch
			free := true
			for _, o := range taken {
				if box.overlaps(o) {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		if row > 0 && said[label] {
			continue
		}
		said[label] = true
		taken = append(taken, box)
		fmt.Fprintf(b, `<text class="band-label" x="%s" y="%s"%s>%s</text>`, f1(lx), f1(box.y), anchor, html.EscapeString(label))
	}
	b.WriteString(`</g>`)

	// Shaded areas first, then lines, in spec order.
	b.WriteString(`<g class="plot" clip-path="url(#` + clip + `)">`)
	for si, s := range c.Series {
		if !s.Area {
			continue
		}
		d := areaPath(p, pg.Runs[s.Run].X, s.Values)
		fmt.Fprintf(b, `<path class="area" data-series="%d" d="%s" fill="%s" stroke="%s" stroke-width="%s"%s/>`,
			si, d, s.Color, s.Color, f1(s.Width), dashAttr(pg.Runs[s.Run].Dash))
	}
	for si, s := range c.Series {
		if s.Area {
			continue
		}
		d := linePath(p, pg.Runs[s.Run].X, s.Values)
		fmt.Fprintf(b, `<path class="series" data-series="%d" d="%s" stroke="%s" stroke-width="%s"%s/>`,
			si, d, s.Color, f1(s.Width), dashAttr(pg.Runs[s.Run].Dash))
	}
	b.WriteString(`</g>`)

	renderLines(b, p, c, labs)
	renderMarks(b, p, pg, c)
	fmt.Fprintf(b, `<line class="crosshair" x1="0" x2="0" y1="%s" y2="%s"/>`, f1(p.top), f1(p.top+p.ph()))
	fmt.Fprintf(b, `<rect class="hover" x="%d" y="0" width="%s" height="%s"/>`, padL, f1(p.pw()), f1(p.h))
	b.WriteString(`</svg>`)
}

func dashAttr(d string) string {
	if d == "" {
		return ""
	}
	return ` stroke-dasharray="` + d + `"`
}

// drawnBand is a band as drawn: equal bands of several runs once.
type drawnBand struct {
	band
	runs  []int
	label string
}

// drawnBands merges the runs' equal bands (same kind, name, detail and
// span) and labels each with its runs.
func drawnBands(pg *page) []drawnBand {
	var out []drawnBand
	for ri, rv := range pg.Runs {
	next:
		for _, bd := range rv.Bands {
			for i := range out {
				if out[i].band == bd {
					out[i].runs = append(out[i].runs, ri)
					continue next
				}
			}
			out = append(out, drawnBand{band: bd, runs: []int{ri}})
		}
	}
	for i := range out {
		d := &out[i]
		d.label = d.Name
		if d.Detail != "" {
			d.label += " " + d.Detail
		}
		if len(pg.Runs) > 1 {
			labels := make([]string, len(d.runs))
			for j, r := range d.runs {
				labels[j] = pg.Runs[r].Label
			}
			d.label = strings.Join(labels, ", ") + ": " + d.label
		}
	}
	return out
}

// linePath is an SVG path through the finite values; a gap breaks it.
func linePath(p plot, xs, vs values) string {
	var b strings.Builder
	pen := false
	for i, v := range vs {
		if i >= len(xs) || math.IsNaN(v) || math.IsInf(v, 0) {
			pen = false
			continue
		}
		isolated := !pen && (i+1 >= len(vs) || math.IsNaN(vs[i+1]))
		if pen {
			b.WriteString("L")
		} else {
			b.WriteString("M")
		}
		b.WriteString(f1(p.X(xs[i])) + " " + f1(p.Y(v)))
		if isolated {
			b.WriteString("h0.5") // a lone point still shows
		}
		pen = true
	}
	return b.String()
}

// areaPath shades from zero up to the values, one closed shape per run of
// finite values.
func areaPath(p plot, xs, vs values) string {
	var b strings.Builder
	base := f1(p.Y(0))
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		b.WriteString("M" + f1(p.X(xs[start])) + " " + base)
		for j := start; j < end; j++ {
			b.WriteString("L" + f1(p.X(xs[j])) + " " + f1(p.Y(vs[j])))
		}
		b.WriteString("L" + f1(p.X(xs[end-1])) + " " + base + "Z")
		start = -1
	}
	for i, v := range vs {
		if i >= len(xs) || math.IsNaN(v) || math.IsInf(v, 0) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
	}
	flush(min(len(vs), len(xs)))
	return b.String()
}

// renderAxes draws the grid, the y labels and the time labels.
func renderAxes(b *strings.Builder, p plot, c chart) {
	b.WriteString(`<g class="axes">`)
	step := niceStep(c.YMax / 4)
	for y := 0.0; y <= c.YMax*(1+1e-9); y += step {
		py := f1(p.Y(y))
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%s" y1="%s" y2="%s"/>`, padL, f1(p.w-padR), py, py)
		fmt.Fprintf(b, `<text class="ylab" x="%d" y="%s">%s</text>`, padL-5, f1(p.Y(y)+3.5), fmtShort(y))
	}
	xstep := timeStep(p.xMax)
	for x := 0.0; x <= p.xMax+1e-9; x += xstep {
		px := f1(p.X(x))
		fmt.Fprintf(b, `<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s"/>`, px, px, f1(p.top+p.ph()), f1(p.top+p.ph()+4))
		fmt.Fprintf(b, `<text class="xlab" x="%s" y="%s">%s</text>`, px, f1(p.h-7), fmtTime(x, p.xMax))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" x2="%s" y1="%s" y2="%s"/>`, padL, f1(p.w-padR), f1(p.top+p.ph()), f1(p.top+p.ph()))
	b.WriteString(`</g>`)
}

// niceStep is the 1-2-2.5-5 step at or above v.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// timeStep spaces about six time labels on a nice number of seconds.
func timeStep(span float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600} {
		if span/s <= 7 {
			return s
		}
	}
	return 7200
}

// fmtTime prints seconds as "12s", or "m:ss" on axes longer than two minutes.
func fmtTime(x, span float64) string {
	if span < 120 {
		return fmt.Sprintf("%gs", math.Round(x*10)/10)
	}
	t := int(math.Round(x))
	if t >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", t/3600, t/60%60, t%60)
	}
	return fmt.Sprintf("%d:%02d", t/60, t%60)
}

// lineLabel is the label of a threshold, limit or watermark line, placed;
// line is the line's y, or NaN for a line above the axis.
type lineLabel struct {
	text, cls string
	line      float64
	box       labelBox
}

// lineLabels names the chart's lines at the plot's right edge, kept apart
// top to bottom inside the plot; a line above the axis is named at the top
// edge.
func lineLabels(p plot, pg *page, c chart) []lineLabel {
	var labs []lineLabel
	for _, l := range c.Lines {
		cls := l.Kind
		switch {
		case l.Pass != nil && *l.Pass:
			cls += " pass"
		case l.Pass != nil:
			cls += " fail"
		}
		if l.Level != "" {
			cls += " " + l.Level
		}
		text := l.Label
		if len(pg.Runs) > 1 {
			labels := make([]string, len(l.Runs))
			for i, r := range l.Runs {
				labels[i] = pg.Runs[r].Label
			}
			text = strings.Join(labels, ", ") + ": " + text
		}
		if l.Pass != nil {
			if *l.Pass {
				text += " ✓"
			} else {
				text += " ✗"
			}
		}
		lab := lineLabel{text: text, cls: cls, line: math.NaN(), box: labelBox{y: p.top + 8}}
		if l.OffScale {
			lab.text = "↑ " + text + " (off scale)"
		} else {
			lab.line = p.Y(l.Y)
			lab.box.y = lab.line - 3
		}
		labs = append(labs, lab)
	}
	sort.SliceStable(labs, func(i, j int) bool { return labs[i].box.y < labs[j].box.y })
	right := p.w - padR - 3
	for i := range labs {
		labs[i].box.y = math.Max(labs[i].box.y, p.top+8)
		if i > 0 && labs[i].box.y-labs[i-1].box.y < labelPitch {
			labs[i].box.y = labs[i-1].box.y + labelPitch
		}
		labs[i].box.from = right - textWidth(labs[i].text, labelSize, false)
		labs[i].box.to = right
	}
	return labs
}

// renderLines draws the chart's thresholds, limits and watermarks and
// their labels (lineLabels).
func renderLines(b *strings.Builder, p plot, c chart, labs []lineLabel) {
	if len(c.Lines) == 0 {
		return
	}
	b.WriteString(`<g class="lines">`)
	for _, l := range labs {
		if math.IsNaN(l.line) {
			continue
		}
		fmt.Fprintf(b, `<line class="hline %s" x1="%d" x2="%s" y1="%s" y2="%s"><title>%s</title></line>`,
			l.cls, padL, f1(p.w-padR), f1(l.line), f1(l.line), html.EscapeString(l.text))
	}
	for _, l := range labs {
		fmt.Fprintf(b, `<text class="line-label %s" x="%s" y="%s">%s</text>`, l.cls, f1(l.box.to), f1(l.box.y), html.EscapeString(l.text))
	}
	b.WriteString(`</g>`)
}

// renderMarks draws the narration steps of every run and, where the chart
// asks, the OOM kills.
func renderMarks(b *strings.Builder, p plot, pg *page, c chart) {
	b.WriteString(`<g class="marks">`)
	for ri, rv := range pg.Runs {
		for _, m := range rv.Narration {
			x := f1(p.X(m.X))
			label := strconv.Itoa(m.Step)
			if len(pg.Runs) > 1 {
				label = rv.Label + label
			}
			cy := 3 + laneH/2 + float64(ri)*laneH
			r := 5.5
			if len(label) > 1 {
				r = 6.5
			}
			fmt.Fprintf(b, `<g class="narration run-%d"><title>%s</title><line x1="%s" x2="%s" y1="%s" y2="%s"/><circle cx="%s" cy="%s" r="%s"/><text x="%s" y="%s">%s</text></g>`,
				ri, html.EscapeString(fmt.Sprintf("%s %s: %s", label, m.Kind, m.Text)), x, x, f1(cy+r), f1(p.top+p.ph()), x, f1(cy), f1(r), x, f1(cy+3), label)
		}
		if c.OOM {
			for _, x := range rv.OOMKills {
				px := f1(p.X(x))
				fmt.Fprintf(b, `<g class="oom run-%d"><title>%s</title><line x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s">✕</text></g>`,
					ri, html.EscapeString(rv.Label+": OOM kill at "+fmtTime(x, 0)), px, px, f1(p.top), f1(p.top+p.ph()), px, f1(p.top+p.ph()-4))
			}
		}
	}
	b.WriteString(`</g>`)
}
