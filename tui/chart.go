package tui

import (
	"math"
	"slices"
	"strings"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/canvas/graph"
	"github.com/NimbleMarkets/ntcharts/canvas/runes"
	"github.com/charmbracelet/lipgloss"
)

// secPerDot is the time one braille dot column stands for: the lab's
// nominal tick, so at 4 Hz every Sample gets its own dot.
const secPerDot = 0.25

// renderBraille draws each series as braille lines into a w×h block of
// cells and returns h lines of exactly w cells. The x axis is time: the
// right edge is now (seconds, Sample.Elapsed) and each dot column is
// secPerDot older, so a late tick shows as a longer segment, not a
// squeezed chart.
//
// Series i is scaled from 0 to tops[i]; values outside are clamped. A point
// that is not ok breaks its line (a gap: nothing is drawn for it). Where
// series overlap in one cell the dots are combined and the cell takes the
// colour of the first series drawn there, so list the most important first.
// The braille grid and line rasterisation are ntcharts'; compositing is done
// here so that each run of one colour is styled once, not each cell.
//
// dashes[i], when given, draws series i dashed (see dash): on a terminal
// without colours the series of one chart differ by their dashes.
func renderBraille(w, h int, now float64, series []*ring, styles []lipgloss.Style, tops []float64, dashes ...dash) []string {
	lines := make([]string, h)
	if w <= 0 || h <= 0 {
		return lines
	}
	cells := make([]rune, w*h)
	owner := make([]int, w*h)
	for i := range owner {
		owner[i] = -1
	}
	gw := 2 * w // braille dots per row of cells
	for si, r := range series {
		top := tops[si]
		if !(top > 0) || math.IsInf(top, 0) {
			top = 1
		}
		grid := graph.NewBrailleGrid(w, h, 0, float64(gw-1), 0, top)
		first := visibleFrom(r, now, gw)
		var pat dash
		if si < len(dashes) {
			pat = dashes[si]
		}
		k := 0 // dots along the line so far: pat decides each one
		set := func(p canvas.Point) {
			if pat.on(k) {
				grid.Set(p)
			}
			k++
		}
		var prev canvas.Point
		prevOK := false
		drawn := false
		for i := first; i < r.len(); i++ {
			p := r.at(i)
			if !p.ok || math.IsNaN(p.v) {
				prevOK = false
				continue
			}
			x := float64(gw-1) - math.Round((now-p.t)/secPerDot)
			v := math.Min(math.Max(p.v, 0), top)
			gp := grid.GridPoint(canvas.Float64Point{X: x, Y: v})
			if prevOK {
				lps := graph.GetLinePoints(prev, gp)
				if len(lps) > 0 && lps[0] != prev {
					slices.Reverse(lps) // along the line, so a dash runs on
				}
				for i, lp := range lps {
					if i > 0 || lp != prev { // prev is drawn (or skipped) once
						set(lp)
					}
				}
			} else {
				set(gp)
			}
			prev, prevOK, drawn = gp, true, true
		}
		if !drawn {
			continue
		}
		for y, row := range grid.BraillePatterns() {
			if y >= h {
				break
			}
			for x, br := range row {
				if x >= w || br == runes.BrailleBlockOffset || br == runes.Null {
					continue
				}
				idx := y*w + x
				if cells[idx] == 0 {
					cells[idx] = br
					owner[idx] = si
				} else {
					cells[idx] = runes.CombineBraillePatterns(cells[idx], br)
				}
			}
		}
	}
	var sb strings.Builder
	for y := 0; y < h; y++ {
		sb.Reset()
		x := 0
		for x < w {
			o := owner[y*w+x]
			end := x
			for end < w && owner[y*w+end] == o {
				end++
			}
			if o < 0 {
				sb.WriteString(strings.Repeat(" ", end-x))
			} else {
				sb.WriteString(styles[o].Render(string(cells[y*w+x : y*w+end])))
			}
			x = end
		}
		lines[y] = sb.String()
	}
	return lines
}

// visibleFrom returns the index of the oldest point of r that falls inside
// a chart gw dots wide ending at now; the point just before it is included
// too, so the line enters from the left edge instead of starting mid-air.
func visibleFrom(r *ring, now float64, gw int) int {
	oldest := now - float64(gw-1)*secPerDot
	i := r.len()
	for i > 0 && r.at(i-1).t >= oldest {
		i--
	}
	if i > 0 {
		i--
	}
	return i
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least floor),
// so a chart's scale changes in few, readable steps.
func niceCeil(v, floor float64) float64 {
	if math.IsNaN(v) || v <= floor {
		return floor
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if c := m * exp; c >= v {
			return c
		}
	}
	return 10 * exp
}

// dash is a line's pattern in braille dots along it: runs drawn and
// skipped in turn, starting with a drawn one ({2, 2}: two dots, a gap of
// two). The zero dash is a solid line.
type dash []int

// monoDashes are the series' patterns on a terminal without colours, in
// the order a chart lists its series: solid first (the series that
// matters most), then patterns that differ within the four dots of the
// legend's sample (dash.sample).
var monoDashes = []dash{nil, {1, 1}, {2, 2}, {3, 1}, {1, 3}, {2, 1}}

// on reports whether the k-th dot along the line is drawn.
func (d dash) on(k int) bool {
	period := 0
	for _, n := range d {
		period += n
	}
	if period == 0 {
		return true
	}
	k %= period
	for i, n := range d {
		if k < n {
			return i%2 == 0
		}
		k -= n
	}
	return true
}

// sample is the legend's picture of d: four dots along the middle of two
// braille cells.
func (d dash) sample() string {
	// ⠂ is a cell's left middle dot, ⠐ its right one.
	var b strings.Builder
	for c := 0; c < 2; c++ {
		r := rune(runes.BrailleBlockOffset)
		if d.on(2 * c) {
			r |= 0x02
		}
		if d.on(2*c + 1) {
			r |= 0x10
		}
		if r == runes.BrailleBlockOffset {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String()
}
