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
func (m *Model) defensesBox(w int) string {
	names := m.defenseNames()
	body := []string{""}
	for i, n := range names {
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
	body = append(body, "", stDim.Render(" ↑/↓ select · space toggle · esc close"))
	return box(" "+stTitle.Render("defenses")+" ", min(42, w), len(body)+2, body)
}
