package tui

import (
	"bytes"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/levee-lab/levee/lab/runfiles"
)

func init() {
	// Goldens are plain text: no colour, no attributes.
	lipgloss.SetColorProfile(termenv.Ascii)
}

// runFixed plays samples through a real Bubble Tea program at w×h, then
// sends keys, and returns the final model once the program has consumed
// every Sample (the channel is closed after the last one).
func runFixed(t *testing.T, f *fakeControls, w, h int, keys ...tea.KeyMsg) *Model {
	t.Helper()
	return runFixedWith(t, New(f), w, h, keys...)
}

// runFixedWith is runFixed for a model built with options.
func runFixedWith(t *testing.T, m *Model, w, h int, keys ...tea.KeyMsg) *Model {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("no more samples"))
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	for _, k := range keys {
		tm.Send(k)
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
}

func feed(f *fakeControls, samples []runfiles.Sample) {
	for _, s := range samples {
		f.ch <- s
	}
	close(f.ch)
}

func goldenFake() *fakeControls {
	f := newFake()
	f.faults[0].Active, f.faults[0].Detail = true, "#2 for 10s"
	f.recording = true
	return f
}

func TestGoldenLayout(t *testing.T) {
	tests := []struct {
		name    string
		w, h    int
		samples int // how many of fixedSamples to play
		keys    []tea.KeyMsg
	}{
		{name: "80x24", w: 80, h: 24, samples: 60},
		{name: "80x24_page2", w: 80, h: 24, samples: 60, keys: []tea.KeyMsg{{Type: tea.KeyTab}}},
		{name: "80x24_defenses", w: 80, h: 24, samples: 60, keys: []tea.KeyMsg{
			{Type: tea.KeyRunes, Runes: []rune("d")}, {Type: tea.KeyDown}}},
		{name: "160x48", w: 160, h: 48, samples: 60},
		{name: "160x48_stale", w: 160, h: 48, samples: 22},
		{name: "160x48_help", w: 160, h: 48, samples: 60, keys: []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("?")}}},
		{name: "80x24_help", w: 80, h: 24, samples: 60, keys: []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("?")}}},
		{name: "100x30_help", w: 100, h: 30, samples: 60, keys: []tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("?")}}},
		{name: "100x30", w: 100, h: 30, samples: 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := goldenFake()
			feed(f, fixedSamples()[:tt.samples])
			m := runFixed(t, f, tt.w, tt.h, tt.keys...)
			view := m.View()
			checkFrame(t, view, tt.w, tt.h)
			golden.RequireEqual(t, []byte(view))
		})
	}
}
