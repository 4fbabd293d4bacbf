package tui

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/lesson"
)

// controlChar returns the first control character of s other than the
// newlines between the view's lines, or -1. The tests render without
// colour, so any ESC in a view came from a message.
func controlChar(s string) rune {
	for _, r := range s {
		if r == '\n' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return r
		}
	}
	return -1
}

// TestViewOutsideText: text the dashboard shows but does not write — a
// lab error carrying a child's log, a progress line, a lesson's narration
// from a YAML file, a fault's error — reaches the terminal without its
// newlines, tabs, carriage returns or escape sequences, so it cannot add
// lines to the frame, move the cursor or clear the screen.
func TestViewOutsideText(t *testing.T) {
	const evil = "line one\n  line two\ttabbed\r\x1b[2J\x1b[Hcleared\x07 \u009b31m end"
	tests := []struct {
		name  string
		setup func(m *Model, f *fakeControls)
	}{
		{"a lesson switch that failed with a child's log", func(m *Model, f *fakeControls) {
			m.Update(switchedMsg{lesson: lesson.Lesson{Name: "06b-redis-cluster"}, err: errors.New("gateway-0: exited before ready (exit status 1); log /tmp/x.log:\n  " + evil)})
		}},
		{"a progress line", func(m *Model, f *fakeControls) {
			m.Update(logMsg{text: evil, isErr: true})
		}},
		{"a lesson's narration", func(m *Model, f *fakeControls) {
			f.lesson = lab.LessonState{Title: "my\tlesson\x1b[2J", Step: 1, Steps: 2, Kind: "watch", Text: evil}
			m.refreshControls()
		}},
		{"a fault that failed", func(m *Model, f *fakeControls) {
			f.faults[1].Error, f.faults[1].Active, f.faults[1].Detail = evil, true, "×3\x1b[2J\n"
			m.refreshControls()
		}},
		{"a prediction's question", func(m *Model, f *fakeControls) {
			f.lesson.Ask = &lab.PredictionAsk{Step: 2, Question: evil, Unit: "%\t"}
			m.refreshControls()
		}},
		{"a lesson in the picker", func(m *Model, f *fakeControls) {
			m.lessons = []lesson.Lesson{{Number: "12", Name: "12-mine", Title: "mine\x1b[2J", Line: evil}}
			m.startLesson = func(context.Context, lesson.Lesson) (lab.Controls, error) { return nil, errFake }
			press(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("l")})
		}},
	}
	for _, tt := range tests {
		for _, size := range []struct{ w, h int }{{80, 24}, {160, 48}} {
			f := newFake()
			m := New(f)
			m.Update(tea.WindowSizeMsg{Width: size.w, Height: size.h})
			for _, s := range fixedSamples()[:8] {
				m.Update(sampleMsg(s))
			}
			tt.setup(m, f)
			v := m.View()
			checkFrame(t, v, size.w, size.h)
			if r := controlChar(v); r >= 0 {
				t.Errorf("%s at %d×%d: the view holds control character %U:\n%s", tt.name, size.w, size.h, r, v)
			}
			// The words stay, one space apart, on one line.
			if size.w == 160 && !strings.Contains(v, "line one line two tabbed cleared") {
				t.Errorf("%s at %d×%d: the text is not shown on one line:\n%s", tt.name, size.w, size.h, v)
			}
		}
	}
}
