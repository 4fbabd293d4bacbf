package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// checkFrame fails unless view is exactly h lines of at most w cells.
func checkFrame(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Errorf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if sw := ansi.StringWidth(l); sw > w {
			t.Errorf("line %d is %d cells wide, want ≤ %d: %q", i, sw, w, ansi.Strip(l))
		}
	}
}
