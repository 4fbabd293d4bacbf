package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// TestResize walks through sizes, small to large and back, and checks every
// frame fills the terminal exactly and never overflows a line.
func TestResize(t *testing.T) {
	f := goldenFake()
	m := New(f)
	for _, s := range fixedSamples() {
		m.Update(sampleMsg(s))
	}
	sizes := []struct{ w, h int }{
		{80, 24}, {160, 48}, {100, 30}, {120, 36}, {119, 35}, {200, 60}, {40, 12}, {81, 25}, {80, 24},
	}
	for _, s := range sizes {
		m.Update(tea.WindowSizeMsg{Width: s.w, Height: s.h})
		v := m.View()
		checkFrame(t, v, s.w, s.h)
		plain := ansi.Strip(v)
		if !strings.Contains(plain, "LEVEE") {
			t.Errorf("%d×%d: no header:\n%s", s.w, s.h, plain)
		}
		wantPages := "page "
		if m.lay.pages == 1 && strings.Contains(plain, wantPages) {
			t.Errorf("%d×%d: one page but a page indicator is shown", s.w, s.h)
		}
		if m.lay.pages > 1 && !strings.Contains(plain, wantPages) {
			t.Errorf("%d×%d: %d pages but no page indicator", s.w, s.h, m.lay.pages)
		}
	}
	if m.lay.pages != 2 {
		t.Errorf("80×24 folds into %d pages, want 2", m.lay.pages)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "P0 99.94%") {
		t.Errorf("80×24 header lacks the P0 success rate:\n%s", v)
	}
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	if m.lay.pages != 1 {
		t.Errorf("160×48 has %d pages, want 1 (every panel on one screen)", m.lay.pages)
	}
	for _, p := range panels {
		if !strings.Contains(ansi.Strip(m.View()), p.title) {
			t.Errorf("160×48 lacks panel %q", p.title)
		}
	}
}

// TestResizeKeepsPage checks that a page beyond the new page count resets.
func TestResizeKeepsPage(t *testing.T) {
	m := New(newFake())
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(m, tea.KeyMsg{Type: tea.KeyTab})
	if m.page != 1 {
		t.Fatalf("page = %d after a tab, want 1", m.page)
	}
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	if m.page != 0 {
		t.Errorf("page = %d at 160×48, want 0", m.page)
	}
}

func TestTooSmall(t *testing.T) {
	m := New(newFake())
	m.Update(tea.WindowSizeMsg{Width: 30, Height: 10})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "too small") {
		t.Errorf("30×10 view does not say too small:\n%s", v)
	}
	for _, l := range strings.Split(m.View(), "\n") {
		if ansi.StringWidth(l) > 30 {
			t.Errorf("line wider than 30: %q", l)
		}
	}
}
