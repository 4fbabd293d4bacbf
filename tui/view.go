package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
)

func (m *Model) panelTitle(p panelDef) string {
	t := " " + stTitle.Render(p.title)
	if p.unit != "" {
		t += stTitle.Render(" (" + p.unit + ")")
	}
	if p.gateway && m.nSamples > 0 && m.last.GatewayStale {
		s := " STALE"
		if m.everFresh {
			s += " " + fmtNum(m.last.Elapsed-m.lastFresh) + "s"
		}
		t += stStale.Render(s)
	}
	return t + " "
}

func (m *Model) renderPanel(i, w, h int) string {
	p := panels[i]
	iw, ih := w-2, h-2
	if p.id == "p0" {
		return box(m.panelTitle(p), w, h, m.p0Body(iw, ih))
	}
	lw := min(20, iw/2)
	cw := iw - lw - 1
	// Scale tops over the points the chart can show.
	tops := make([]float64, len(p.series))
	styles := make([]lipgloss.Style, len(p.series))
	shared := 0.0
	for j, sd := range p.series {
		styles[j] = lipgloss.NewStyle().Foreground(sd.color)
		r := m.series[i][j]
		mx := 0.0
		for k := visibleFrom(r, m.last.Elapsed, 2*cw); k < r.len(); k++ {
			if pt := r.at(k); pt.ok && !math.IsNaN(pt.v) {
				mx = math.Max(mx, pt.v)
			}
		}
		tops[j] = mx
		shared = math.Max(shared, mx)
	}
	for j := range tops {
		switch {
		case p.fixedTop > 0:
			tops[j] = p.fixedTop
		case p.ownScale:
			tops[j] = niceCeil(tops[j], p.minTop)
		default:
			tops[j] = niceCeil(shared, p.minTop)
		}
	}
	// Without colours the series differ by their dashes, shown in the
	// legend too (every line looked the same under NO_COLOR).
	var dashes []dash
	if lipgloss.ColorProfile() == termenv.Ascii {
		dashes = make([]dash, len(p.series))
		for j := range dashes {
			dashes[j] = monoDashes[j%len(monoDashes)]
		}
	}
	chart := renderBraille(cw, ih, m.last.Elapsed, m.series[i], styles, tops, dashes...)
	legend := make([]string, 0, ih)
	for j, sd := range p.series {
		pt := m.series[i][j].last()
		val := "—"
		if pt.ok && m.nSamples > 0 {
			f := sd.format
			if f == nil {
				f = fmtNum
			}
			val = f(pt.v) + unitSuffix(p.unit)
		}
		mark := "━"
		if dashes != nil {
			mark = dashes[j].sample()
		}
		legend = append(legend, legendLine(styles[j].Render(mark)+" ", sd.name, val, lw))
	}
	span := fmt.Sprintf("%.0fs", float64(2*cw-1)*secPerDot)
	if !p.ownScale && p.fixedTop == 0 && len(tops) > 0 {
		legend = append(legend, stDim.Render("top "+fmtNum(tops[0])+unitSuffix(p.unit)+" · "+span))
	} else {
		legend = append(legend, stDim.Render("last "+span))
	}
	if p.extra != nil && m.nSamples > 0 {
		for _, l := range p.extra(&m.last) {
			legend = append(legend, extraLine(l, lw))
		}
	}
	body := make([]string, ih)
	for y := range body {
		l := ""
		if y < len(legend) {
			l = legend[y]
		}
		body[y] = chart[y] + " " + fit(l, lw)
	}
	return box(m.panelTitle(p), w, h, body)
}

// legendLine is a series' legend line in w cells: mark, name and the
// value right-aligned. The name is cut (…) when they do not fit, never the
// value: at 80 columns a long name, or the two-cell mark drawn without
// colours, cut "100k/s" to "100k…".
func legendLine(mark, name, val string, w int) string {
	room := w - ansi.StringWidth(mark) - 1 - ansi.StringWidth(val)
	if ansi.StringWidth(name) > room {
		name = ansi.Truncate(name, max(room, 0), "…")
	}
	left := mark + name
	return left + strings.Repeat(" ", max(w-ansi.StringWidth(left)-ansi.StringWidth(val), 1)) + val
}

// extraLine is a panel's extra legend line in w cells. A line "label\tvalue"
// shows as "label value", the label cut (…) when they do not fit, never
// the value ("+ client retries 120" lost its value at 80 columns); a line
// without a tab is cut at its end.
func extraLine(l string, w int) string {
	label, val, ok := strings.Cut(l, "\t")
	if !ok {
		return l
	}
	if room := w - 1 - ansi.StringWidth(val); ansi.StringWidth(label) > room {
		label = ansi.Truncate(label, max(room, 0), "…")
	}
	return label + " " + val
}

func unitSuffix(u string) string {
	switch u {
	case "", "%", "/s":
		return u
	default:
		return " " + u
	}
}

// p0Body is the large P0 success number with P1/P2 and P0 counts below.
func (m *Model) p0Body(iw, ih int) []string {
	if m.nSamples == 0 {
		return []string{"", center("waiting for samples…", iw)}
	}
	p0 := m.last.ByPriority[wire.PriorityP0]
	text, st := successText(p0.SuccessRate, p0.SuccessFinished)
	var body []string
	big := bigText(text + "%")
	if ih >= 6 && ansi.StringWidth(big[0]) <= iw {
		for _, l := range big {
			body = append(body, center(st.Render(l), iw))
		}
	} else {
		body = append(body, center(st.Render("P0 "+text+"%"), iw))
	}
	var others []string
	for _, p := range load.Priorities[1:] {
		ps := m.last.ByPriority[p]
		t, s := successText(ps.SuccessRate, ps.SuccessFinished)
		others = append(others, p+" "+s.Render(t+"%"))
	}
	body = append(body, center(strings.Join(others, "   "), iw))
	body = append(body, center(stDim.Render(fmt.Sprintf("P0 ok %d of %d offered", p0.OKTotal, p0.OfferedTotal)), iw))
	if pad := (ih - len(body)) / 2; pad > 0 {
		body = append(make([]string, pad), body...)
	}
	return body
}

func center(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw >= w {
		return s
	}
	return strings.Repeat(" ", (w-sw)/2) + s
}

// View composes the screen from the model's state. It never calls the lab.
func (m *Model) View() string {
	w, h := m.width, m.height
	if m.lay.tooSmall {
		// Keys still work here: say how to quit, and show what the last
		// one did (the status line), within the terminal's height.
		msg := fmt.Sprintf("terminal %d×%d is too small: Levee needs %d×%d (80×24 or more is best); q quits", w, h, minWidth, minHeight)
		out := ansi.Wordwrap(msg, max(w, 10), "")
		if m.status != "" {
			out += "\n\n" + ansi.Wordwrap(m.status, max(w, 10), "")
		}
		lines := strings.Split(out, "\n")
		return strings.Join(lines[:min(len(lines), max(h, 1))], "\n")
	}
	lines := make([]string, 0, h)
	lines = append(lines, fit(m.header(), w))
	grid := m.grid()
	switch {
	case m.pick.open:
		grid = overlay(grid, m.pickerBox(w-2), w)
	case m.panelOpen:
		grid = overlay(grid, m.defensesBox(w), w)
	case m.showHelp:
		grid = overlay(grid, m.fullHelpBox(), w)
	case m.prompt.ask != nil:
		grid = overlay(grid, m.promptBox(w-2), w)
	}
	lines = append(lines, grid...)
	lines = append(lines, m.faultRows()...)
	lines = append(lines, m.nodeRows()...)
	lines = append(lines, m.lessonRows()...)
	lines = append(lines, fit(m.statusLine(), w))
	// The bar is always one line: the full help (?) is the box above, and
	// help.Model.View would render a state's FullHelp, several lines, while
	// it shows (? over the prediction prompt pushed the header off screen).
	switch {
	case m.stopping || m.switching != "":
		// Every other key does nothing now: the bar shows what quit does.
		lines = append(lines, m.helpBar([]key.Binding{m.busyQuit()}, 1))
	case m.pick.open:
		lines = append(lines, m.helpBar(pickerHelp(m.keys).ShortHelp(), 2))
	case m.panelOpen:
		lines = append(lines, m.helpBar(panelHelp(m.keys).ShortHelp(), 2))
	case m.prompt.ask != nil:
		lines = append(lines, m.helpBar(promptHelp(m.keys).ShortHelp(), 1))
	default:
		lines = append(lines, m.helpBar(m.keys.ShortHelp(), 2))
	}
	return strings.Join(lines, "\n")
}

// busyQuit is the only binding that works while the lab stops or a
// lesson starts, with what it does then.
func (m *Model) busyQuit() key.Binding {
	b := m.keys.Quit
	switch {
	case !m.stopping:
		b.SetHelp("q/ctrl+c", "quit")
	case m.hurry.kill != nil:
		b.SetHelp("q/ctrl+c", "again: kill every child process now")
	default:
		b.SetHelp("q/ctrl+c", "again: stop waiting for the lab")
	}
	return b
}

// helpBar is the one-line help bar of bindings, exactly the terminal's
// width. When it does not fit, the bindings just before the last keep are
// left out, one at a time, so the last ones always show (? help and
// q quit; a box's enter or space and its close; the prompt's quit): cut
// at the end, a narrow terminal lost the way to the full help.
func (m *Model) helpBar(bs []key.Binding, keep int) string {
	hm := m.help
	hm.Width = 0 // no "…" cut: bindings are left out whole
	bs = append([]key.Binding(nil), bs...)
	bar := hm.ShortHelpView(bs)
	for ansi.StringWidth(bar) > m.width && len(bs) > keep {
		i := max(len(bs)-keep-1, 0)
		bs = append(bs[:i], bs[i+1:]...)
		bar = hm.ShortHelpView(bs)
	}
	return fit(bar, m.width)
}

func (m *Model) grid() []string {
	var out []string
	slot := 0
	for r := 0; r < m.lay.rows; r++ {
		cols := make([][]string, m.lay.cols)
		for c := 0; c < m.lay.cols; c++ {
			if slot < len(m.rendered) {
				cols[c] = strings.Split(m.rendered[slot], "\n")
			}
			slot++
		}
		for y := 0; y < m.lay.rowH[r]; y++ {
			var sb strings.Builder
			for c := range cols {
				if y < len(cols[c]) {
					sb.WriteString(cols[c][y])
				} else {
					sb.WriteString(strings.Repeat(" ", m.lay.colW[c]))
				}
			}
			out = append(out, sb.String())
		}
	}
	return out
}

// overlay draws box (lines of equal width) centred over bg.
func overlay(bg []string, b string, w int) []string {
	bl := strings.Split(b, "\n")
	bw := ansi.StringWidth(bl[0])
	x := max((w-bw)/2, 0)
	y := max((len(bg)-len(bl))/2, 0)
	out := append([]string(nil), bg...)
	for i, l := range bl {
		if y+i >= len(out) {
			break
		}
		row := fit(out[y+i], w)
		out[y+i] = ansi.Truncate(row, x, "") + l + ansi.TruncateLeft(row, x+bw, "")
	}
	return out
}

func (m *Model) header() string {
	parts := []string{stLogo.Render(" LEVEE")}
	// Narrow terminals get terse labels; the order puts what matters most
	// first, so truncation only eats the tail.
	level := "—"
	if m.nSamples > 0 && m.last.Level != "" && !m.last.GatewayStale {
		level = m.last.Level
	}
	wide := m.width >= bigLayoutW
	badge := levelStyle(level).Render("■ " + strings.ToUpper(level))
	if wide {
		badge = "level " + badge
	}
	parts = append(parts, badge)
	// Recording goes first after the level: at 80 columns the rest of the
	// header may be cut (lesson 09's agents and a paused ramp cut it), and
	// whether the lab records must not be.
	if m.recording {
		parts = append(parts, stRec.Render("● REC "+clock(m.last.Elapsed-m.recStart)))
	}
	if m.nSamples > 0 {
		if wide {
			parts = append(parts,
				fmt.Sprintf("target %.0f/s", m.last.TargetRPS),
				fmt.Sprintf("achieved %.0f/s", m.last.OfferedRPS))
		} else {
			parts = append(parts, fmt.Sprintf("target %.0f → %.0f/s", m.last.TargetRPS, m.last.OfferedRPS))
		}
	}
	if m.nSamples > 0 {
		p0 := m.last.ByPriority[wire.PriorityP0]
		t, s := successText(p0.SuccessRate, p0.SuccessFinished)
		parts = append(parts, "P0 "+s.Render(t+"%"))
	}
	if a := m.last.Agent; m.nSamples > 0 && a != nil {
		// Seed 004: the level agent tasks are planned at, and the share
		// answered in time (degraded or not) over the last seconds.
		al := a.Level
		if al == "" {
			al = "—"
		}
		t, s := successText(a.SuccessRate, a.SuccessFinished)
		parts = append(parts, "agents "+levelStyle(al).Render(strings.ToUpper(al))+" "+s.Render(t+"%"))
	}
	if m.paused {
		parts = append(parts, stStale.Render("ramp paused"))
	}
	// Narrow, Redis goes before the defenses: it is what a Redis lesson
	// watches, and the defenses panel (d) lists the defenses anyway.
	redis := m.redisBadge(wide)
	if !wide && redis != "" {
		parts = append(parts, redis)
	}
	var on []string
	for _, n := range m.defenseNames() {
		if m.defenses[n] {
			a := defenseAbbrev[n]
			if a == "" {
				a = strings.ToUpper(n)
			}
			on = append(on, a)
		}
	}
	switch {
	case len(on) == 0:
		parts = append(parts, stErr.Render("defenses OFF"))
	case wide:
		parts = append(parts, "defenses "+stBold.Render(strings.Join(on, " ")))
	default:
		parts = append(parts, stBold.Render(strings.Join(on, " ")))
	}
	if wide && redis != "" {
		parts = append(parts, redis)
	}
	if m.nSamples > 0 {
		parts = append(parts, stDim.Render("t "+clock(m.last.Elapsed)))
	}
	return strings.Join(parts, "  ")
}

// clock prints seconds as mm:ss (h:mm:ss from an hour).
func clock(sec float64) string {
	s := int(math.Max(sec, 0))
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}
