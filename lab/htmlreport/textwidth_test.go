package htmlreport

import "testing"

// TestTextWidth: every printable ASCII character has its width (a short
// table would measure the last ones as nothing), and wide letters measure
// wider than narrow ones, bold wider than regular.
func TestTextWidth(t *testing.T) {
	for i, w := range asciiWidth {
		if w == 0 {
			t.Errorf("%q has no width", rune(' '+i))
		}
	}
	if m, i := textWidth("mmmm", 12, false), textWidth("iiii", 12, false); m < 3*i {
		t.Errorf("mmmm %.1f, iiii %.1f: want m about 3.5× i", m, i)
	}
	if b, r := textWidth("node_kill #2", 12, true), textWidth("node_kill #2", 12, false); b <= r {
		t.Errorf("bold %.1f, regular %.1f", b, r)
	}
	// "↑ pod memory limit 256 MB (off scale)" is 233.3 units wide at 12 in
	// Chromium with DejaVu Sans.
	if w := textWidth("↑ pod memory limit 256 MB (off scale)", 12, false); w < 233 || w > 250 {
		t.Errorf("pod limit label %.1f units, Chromium draws 233.3", w)
	}
}
