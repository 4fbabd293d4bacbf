package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// fullHelpBox draws the full help (?) in a box over the charts, in the
// first of keyMap.fullHelpLayouts that fits the charts' width and height
// (80×24 takes three columns), with blank lines around the keys when
// there is room. When none fits both ways, the first that fits the width
// is taken and its last rows are cut: a cut row loses a key, but a cut
// column would lose the descriptions of half of them.
func (m *Model) fullHelpBox() string {
	hm := m.help
	hm.ShowAll = true
	hm.Width = 0
	gridH := 0
	for _, h := range m.lay.rowH {
		gridH += h
	}
	var lines, narrow []string
	w, narrowW := 0, 0
	for _, layout := range m.keys.fullHelpLayouts() {
		lines = strings.Split(hm.FullHelpView(layout), "\n")
		w = 0
		for _, l := range lines {
			w = max(w, ansi.StringWidth(l))
		}
		// Border and two spaces each side; border and the closing hint
		// above and below (and two blank lines when there is room).
		if w+4 > m.width {
			continue
		}
		if len(lines)+3 <= gridH {
			narrow = nil
			break
		}
		if narrow == nil {
			narrow, narrowW = lines, w
		}
	}
	if narrow != nil {
		lines, w = narrow, narrowW
	}
	w = min(w+4, m.width)
	roomy := len(lines)+5 <= gridH
	var body []string
	if roomy {
		body = append(body, "")
	}
	for _, l := range lines {
		body = append(body, "  "+l)
	}
	if roomy {
		body = append(body, "")
	}
	body = append(body, stDim.Render("  ? or esc closes this help"))
	return box(" "+stTitle.Render("keys")+" ", w, len(body)+2, body)
}
