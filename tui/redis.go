package tui

import "fmt"

// redisBadge is the header's Redis: its kind and address on a wide
// screen, red when its processes are down, and the decisions per second
// the gateways make without it; "" without Redis. A narrow header leaves
// out the kind: its state and the fallback rate must fit in 80 columns.
func (m *Model) redisBadge(wide bool) string {
	r := m.redis
	if r.Kind == "" || r.Kind == "off" {
		return ""
	}
	s := "redis"
	if wide {
		s += " " + clean(r.Kind)
		if r.Addr != "" {
			s += " " + clean(r.Addr)
		}
	}
	var out string
	switch {
	case r.Nodes > 1 && r.Up < r.Nodes:
		out = s + " " + stDown.Render(fmt.Sprintf("%d/%d up", r.Up, r.Nodes))
	case r.Nodes > 1:
		out = s + " " + stUp.Render(fmt.Sprintf("%d/%d up", r.Up, r.Nodes))
	case r.Nodes == 1 && r.Up == 0:
		out = s + " " + stDown.Render("✕ down")
	case r.Nodes == 1:
		out = s + " " + stUp.Render("●")
	default:
		out = s
	}
	if m.nSamples > 0 && m.last.RedisFallbackRPS >= 0.5 {
		out += " " + stStale.Render(fmt.Sprintf("local %.0f/s", m.last.RedisFallbackRPS))
	}
	return out
}
