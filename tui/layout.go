package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Sizes.
const (
	minWidth, minHeight = 40, 12
	minPanelW           = 40 // a column is at least this wide
	minPanelH           = 8  // a panel row is at least this tall
	maxCols, maxRows    = 3, 3
	bigLayoutW          = 120 // from here on the rows below the charts get more lines
	bigLayoutH          = 36
)

// layout is where everything goes for one terminal size.
type layout struct {
	tooSmall bool
	cols     int
	rows     int
	colW     []int
	rowH     []int
	perPage  int
	pages    int
	// lines of the rows below the charts
	faultLines, nodeLines, lessonLines int
}

func computeLayout(w, h, nPanels int) layout {
	l := layout{pages: 1}
	if w < minWidth || h < minHeight {
		l.tooSmall = true
		return l
	}
	l.faultLines, l.nodeLines, l.lessonLines = 1, 1, 1
	if w >= bigLayoutW && h >= bigLayoutH {
		l.faultLines, l.nodeLines, l.lessonLines = 2, 2, 3
	}
	avail := h - 3 - l.faultLines - l.nodeLines - l.lessonLines // header, status, help
	l.cols = clamp(w/minPanelW, 1, maxCols)
	l.rows = clamp(avail/minPanelH, 1, maxRows)
	l.colW = split(w, l.cols)
	l.rowH = split(avail, l.rows)
	l.perPage = l.cols * l.rows
	l.pages = (nPanels + l.perPage - 1) / l.perPage
	return l
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// split divides total into n near-equal parts, the larger ones first.
func split(total, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = total / n
		if i < total%n {
			out[i]++
		}
	}
	return out
}

// relayout recomputes the layout for the window size and re-renders.
func (m *Model) relayout() {
	m.visible = m.visible[:0]
	for i := range panels {
		m.visible = append(m.visible, i)
	}
	m.lay = computeLayout(m.width, m.height, len(m.visible))
	if m.lay.pages > 1 {
		m.visible = m.visible[:0]
		for i, p := range panels {
			if !p.onePageOnly {
				m.visible = append(m.visible, i)
			}
		}
		m.lay = computeLayout(m.width, m.height, len(m.visible))
	}
	m.help.Width = m.width
	if m.page >= m.lay.pages {
		m.page = 0
	}
	if m.pick.open {
		m.scrollPicker()
	}
	m.renderPanels()
}

// renderPanels renders the panels on the current page into m.rendered.
func (m *Model) renderPanels() {
	m.rendered = m.rendered[:0]
	if m.lay.tooSmall {
		return
	}
	for slot := 0; slot < m.lay.perPage; slot++ {
		r, c := slot/m.lay.cols, slot%m.lay.cols
		w, h := m.lay.colW[c], m.lay.rowH[r]
		k := m.page*m.lay.perPage + slot
		if k >= len(m.visible) {
			m.rendered = append(m.rendered, blankBox(w, h))
			continue
		}
		m.rendered = append(m.rendered, m.renderPanel(m.visible[k], w, h))
	}
}

func blankBox(w, h int) string {
	line := strings.Repeat(" ", w)
	lines := make([]string, h)
	for i := range lines {
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}

// box draws a border of w×h cells with title in the top edge around body
// lines (padded or cut to fit).
func box(title string, w, h int, body []string) string {
	iw := w - 2
	var sb strings.Builder
	t := ansi.Truncate(title, max(iw-2, 0), "…")
	tw := ansi.StringWidth(t)
	sb.WriteString(stBorder.Render("┌"))
	if iw >= 2 {
		sb.WriteString(stBorder.Render("─") + t + stBorder.Render(strings.Repeat("─", max(iw-1-tw, 0))))
	} else {
		sb.WriteString(stBorder.Render(strings.Repeat("─", max(iw, 0))))
	}
	sb.WriteString(stBorder.Render("┐"))
	side := stBorder.Render("│")
	for i := 0; i < h-2; i++ {
		sb.WriteByte('\n')
		line := ""
		if i < len(body) {
			line = body[i]
		}
		sb.WriteString(side + fit(line, iw) + side)
	}
	sb.WriteByte('\n')
	sb.WriteString(stBorder.Render("└" + strings.Repeat("─", max(iw, 0)) + "┘"))
	return sb.String()
}

// fit pads or cuts s to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-sw)
}
