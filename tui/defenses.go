package tui

import (
	"fmt"
	"sort"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// panelKey handles a key while the defenses panel is open.
func (m *Model) panelKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	names := m.defenseNames()
	switch {
	case key.Matches(msg, k.PanelUp):
		if m.panelSel > 0 {
			m.panelSel--
		}
	case key.Matches(msg, k.PanelDown):
		if m.panelSel < len(names)-1 {
			m.panelSel++
		}
	case key.Matches(msg, k.PanelToggle):
		if m.panelSel < len(names) {
			name := names[m.panelSel]
			on := !m.defenses[name]
			if err := m.ctrl.SetDefense(name, on); err != nil {
				m.setStatus(fmt.Sprintf("defense %s: %v", name, err), true)
			} else {
				m.setStatus(fmt.Sprintf("defense %s %s", name, onOff(on)), false)
			}
			m.defenses = m.ctrl.Defenses()
		}
	case key.Matches(msg, k.PanelClose):
		m.panelOpen = false
	}
	return m, nil
}

// defenseNames lists the known defenses in display order.
func (m *Model) defenseNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range defenseOrder {
		if _, ok := m.defenses[n]; ok {
			out = append(out, n)
			seen[n] = true
		}
	}
	var rest []string
	for n := range m.defenses {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// defensesBox is the defenses panel drawn over the charts, at most w wide.
// Where the charts are too short for every defense (below about 80×20),
// it drops its blank lines and shows the defenses around the selected one
// ("defenses 3–6 of 7"), so ↑/↓ never select a defense off screen.
func (m *Model) defensesBox(w int) string {
	names := m.defenseNames()
	gridH := 0
	for _, h := range m.lay.rowH {
		gridH += h
	}
	roomy := len(names)+6 <= gridH // borders, two blank lines, the hint
	from, to := 0, len(names)
	if shown := max(gridH-3, 1); !roomy && len(names) > shown {
		from = min(max(m.panelSel-shown/2, 0), len(names)-shown)
		to = from + shown
	}
	var body []string
	if roomy {
		body = append(body, "")
	}
	for i := from; i < to; i++ {
		n := names[i]
		mark := "[ ]"
		if m.defenses[n] {
			mark = "[x]"
		}
		l := fmt.Sprintf(" %s %-10s %-6s ", mark, n, defenseAbbrev[n])
		if i == m.panelSel {
			body = append(body, "▸"+stSelected.Render(l))
		} else {
			body = append(body, " "+l)
		}
	}
	if len(names) == 0 {
		body = append(body, "  the lab reports no defenses")
	}
	if roomy {
		body = append(body, "")
	}
	body = append(body, stDim.Render(" ↑/↓ select · space toggle · esc close"))
	title := "defenses"
	if to-from < len(names) {
		title = fmt.Sprintf("defenses %d–%d of %d", from+1, to, len(names))
	}
	return box(" "+stTitle.Render(title)+" ", min(42, w), len(body)+2, body)
}
