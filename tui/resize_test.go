package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/lesson"
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

// TestOverlaysFitNarrow: every box drawn over the charts (defenses, lesson
// picker, full help, prediction prompt) fits the narrowest terminal the
// dashboard draws on. The defenses panel was 42 cells wide whatever the
// width: at 40 and 41 columns its lines overflowed and wrapped.
func TestOverlaysFitNarrow(t *testing.T) {
	open := map[string]func(m *Model, f *fakeControls){
		"defenses": func(m *Model, f *fakeControls) { press(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("d")}) },
		"picker":   func(m *Model, f *fakeControls) { press(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("l")}) },
		"help":     func(m *Model, f *fakeControls) { press(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("?")}) },
		"prompt": func(m *Model, f *fakeControls) {
			f.lesson.Ask = &lab.PredictionAsk{Step: 2, Question: "What share of P0 will succeed at 10×?", Unit: "%"}
			m.refreshControls()
		},
	}
	ls := []lesson.Lesson{{Number: "03", Name: "03-priority-shedding", Title: "Priority load shedding: P0 survives a 10× overload", Articles: []string{"003"}, Line: "Three model nodes, 10× their capacity."}}
	start := func(context.Context, lesson.Lesson) (lab.Controls, error) { return nil, errFake }
	for name, o := range open {
		for _, s := range []struct{ w, h int }{{40, 12}, {41, 12}, {40, 24}, {41, 40}} {
			f := newFake()
			m := New(f, WithLessons(ls, start))
			m.Update(tea.WindowSizeMsg{Width: s.w, Height: s.h})
			for _, smp := range fixedSamples()[:8] {
				m.Update(sampleMsg(smp))
			}
			o(m, f)
			t.Run(fmt.Sprintf("%s_%dx%d", name, s.w, s.h), func(t *testing.T) { checkFrame(t, m.View(), s.w, s.h) })
		}
	}
}

// TestHeaderDefensesOff: with every defense off the header says so once.
// From 120 columns it read "defenses defenses OFF" (seen in tmux with
// lesson 01): the wide label was put before the words that carry it.
func TestHeaderDefensesOff(t *testing.T) {
	for _, w := range []int{80, 160} {
		f := newFake()
		for k := range f.defenses {
			f.defenses[k] = false
		}
		m := New(f)
		m.Update(tea.WindowSizeMsg{Width: w, Height: 48})
		m.Update(sampleMsg(fixedSamples()[0]))
		head := ansi.Strip(strings.SplitN(m.View(), "\n", 2)[0])
		if strings.Count(head, "defenses") != 1 || !strings.Contains(head, "defenses OFF") {
			t.Errorf("%d columns: header %q, want \"defenses OFF\" once", w, head)
		}
	}
}

// TestTabOnOnePage: where every panel shows on one page (160×48), tab and
// shift+tab say so in the status line instead of doing nothing silently.
func TestTabOnOnePage(t *testing.T) {
	for _, k := range []tea.KeyMsg{{Type: tea.KeyTab}, {Type: tea.KeyShiftTab}} {
		m := New(newFake())
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		m.Update(sampleMsg(fixedSamples()[0]))
		if m.lay.pages != 1 {
			t.Fatalf("160×48 has %d pages, want 1", m.lay.pages)
		}
		press(m, k)
		if v := ansi.Strip(m.View()); !strings.Contains(v, "every panel already shows") {
			t.Errorf("%s at 160×48 said nothing:\n%s", k, v)
		}
		if m.page != 0 {
			t.Errorf("%s at 160×48: page %d", k, m.page)
		}
	}
}

// TestTooSmallSaysWhatKeysDid: keys work on a terminal too small to draw
// on; the message says q quits and shows the status line (what the last
// key did, tab saying no panel shows), never more lines than the terminal
// has.
func TestTooSmallSaysWhatKeysDid(t *testing.T) {
	f := newFake()
	m := New(f)
	m.Update(sampleMsg(fixedSamples()[0]))
	m.Update(tea.WindowSizeMsg{Width: 30, Height: 10})
	if v := ansi.Strip(m.View()); !strings.Contains(strings.Join(strings.Fields(v), " "), "q quits") {
		t.Errorf("30×10: no way to quit named:\n%s", v)
	}
	press(m, keyRunes("1"))
	v := ansi.Strip(m.View())
	if !strings.Contains(strings.Join(strings.Fields(v), " "), "fault node_kill: applying") {
		t.Errorf("30×10: the fault key's effect does not show:\n%s", v)
	}
	// tab has no page to turn, and no panel shows on this one.
	press(m, tea.KeyMsg{Type: tea.KeyTab})
	v = strings.Join(strings.Fields(ansi.Strip(m.View())), " ")
	if !strings.Contains(v, "tab: no panel shows below 40×12") || strings.Contains(v, "already shows") {
		t.Errorf("30×10: tab's status line is not that no panel shows:\n%s", v)
	}
	for _, h := range []int{1, 3, 10} {
		m.Update(tea.WindowSizeMsg{Width: 20, Height: h})
		if n := len(strings.Split(m.View(), "\n")); n > h {
			t.Errorf("20×%d: %d lines", h, n)
		}
	}
}

// TestDefensesPanelShort: where the charts are too short for every
// defense (45×13), the panel shows the one ↓ selects, whole and framed.
func TestDefensesPanelShort(t *testing.T) {
	f := newFake()
	m := New(f)
	m.Update(tea.WindowSizeMsg{Width: 45, Height: 13})
	m.Update(sampleMsg(fixedSamples()[0]))
	press(m, keyRunes("d"))
	names := m.defenseNames()
	for i := range names {
		if i > 0 {
			press(m, tea.KeyMsg{Type: tea.KeyDown})
		}
		view := m.View()
		checkFrame(t, view, 45, 13)
		v := ansi.Strip(view)
		if !strings.Contains(v, "▸ [") || !strings.Contains(v, names[i]) || !strings.Contains(v, fmt.Sprintf(" of %d", len(names))) {
			t.Errorf("defense %d (%s) selected but not shown:\n%s", i, names[i], v)
		}
		if !strings.Contains(v, "└") || !strings.Contains(v, "esc close") {
			t.Errorf("defense %d: the panel lost its hint or bottom:\n%s", i, v)
		}
	}
}
