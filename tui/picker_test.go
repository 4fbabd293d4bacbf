package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/lesson"
)

// fakeLessons is a fixed catalogue for goldens (the real one grows).
func fakeLessons(n int) []lesson.Lesson {
	var out []lesson.Lesson
	for i := 1; i <= n; i++ {
		num := fmt.Sprintf("%02d", i)
		title := fmt.Sprintf("Lesson number %d", i)
		out = append(out, lesson.Lesson{
			Number: num, Name: num + "-lesson", Title: title, Articles: []string{fmt.Sprintf("%03d", i%5)},
			Line:       fmt.Sprintf("What lesson %d shows, in one sentence that is long enough to be cut at 80 columns.", i),
			Experiment: &experiment.Experiment{Title: num + " · " + title},
		})
	}
	return out
}

// starter is a StartLesson that records what it started and hands out a
// new fake lab each time.
type starter struct {
	mu      sync.Mutex
	started []string
	fail    error
	labs    []*fakeControls
}

func (s *starter) start(_ context.Context, l lesson.Lesson) (lab.Controls, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, l.Name)
	if s.fail != nil {
		return nil, s.fail
	}
	f := newFake()
	f.lesson = lab.LessonState{Title: l.Experiment.Title, Step: 1, Steps: 3, Kind: "watch", Text: "now playing " + l.Name}
	s.labs = append(s.labs, f)
	return f, nil
}

func TestGoldenPicker(t *testing.T) {
	for _, tt := range []struct {
		name string
		w, h int
		keys []tea.KeyMsg
	}{
		{"160x48", 160, 48, []tea.KeyMsg{keyRunes("l"), {Type: tea.KeyDown}, {Type: tea.KeyDown}}},
		{"80x24", 80, 24, []tea.KeyMsg{keyRunes("l"), {Type: tea.KeyDown}}},
		{"80x24_scrolled", 80, 24, []tea.KeyMsg{keyRunes("l"), keyRunes("j"), keyRunes("j"), keyRunes("j"), keyRunes("j"),
			keyRunes("j"), keyRunes("j"), keyRunes("j"), keyRunes("j"), keyRunes("j"), keyRunes("j"), keyRunes("j"), keyRunes("j")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := goldenFake()
			f.lesson.Title = "03 · Lesson number 3"
			feed(f, fixedSamples()[:60])
			s := &starter{}
			n := 13
			if strings.HasSuffix(tt.name, "scrolled") {
				n = 20
			}
			m := runFixedWith(t, New(f, WithLessons(fakeLessons(n), s.start)), tt.w, tt.h, tt.keys...)
			view := m.View()
			checkFrame(t, view, tt.w, tt.h)
			golden.RequireEqual(t, []byte(view))
		})
	}
}

// Every lesson built into the binary shows in the picker at 160×48, and
// each starts: enter runs the switch as a command, the dashboard then
// shows the new lab, and the old lab's channel is no longer read.
func TestPickerStartsEveryLesson(t *testing.T) {
	lessons, err := lesson.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	s := &starter{}
	first := newFake()
	m := New(first, WithLessons(lessons, s.start))
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.Update(sampleMsg(fixedSamples()[0]))
	press(m, keyRunes("l"))
	view := ansi.Strip(m.View())
	checkFrame(t, m.View(), 160, 48)
	for _, l := range lessons {
		if !strings.Contains(view, l.Number+"  ") || !strings.Contains(view, l.Title) {
			t.Errorf("lesson %s (%s) missing from the picker at 160×48:\n%s", l.Number, l.Title, view)
		}
	}
	press(m, tea.KeyMsg{Type: tea.KeyEsc})
	for i, l := range lessons {
		keys := []tea.KeyMsg{keyRunes("l")}
		for range len(lessons) { // to the top, then down to i
			keys = append(keys, tea.KeyMsg{Type: tea.KeyUp})
		}
		for range i {
			keys = append(keys, tea.KeyMsg{Type: tea.KeyDown})
		}
		press(m, keys...)
		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
		if cmd == nil {
			t.Fatalf("enter on %s returned no command", l.Name)
		}
		if v := ansi.Strip(m.View()); !strings.Contains(v, "starting "+l.Name) {
			t.Errorf("no progress while %s starts:\n%s", l.Name, v)
		}
		m.Update(keyRunes("s")) // ignored while switching
		msg := cmd()
		m.Update(msg)
		cur := s.labs[len(s.labs)-1]
		if m.ctrl != cur {
			t.Fatalf("after starting %s the dashboard shows another lab", l.Name)
		}
		if v := ansi.Strip(m.View()); !strings.Contains(v, "now playing "+l.Name) || !strings.Contains(v, "lesson "+l.Name+" started") {
			t.Errorf("after starting %s:\n%s", l.Name, v)
		}
		if len(cur.Calls()) != 0 {
			t.Errorf("keys pressed during the switch reached the new lab: %v", cur.Calls())
		}
	}
	if len(s.started) != len(lessons) {
		t.Errorf("started %d lessons, want %d", len(s.started), len(lessons))
	}
	// What the first lab's channel says after the switch is ignored.
	close(first.ch)
	m.Update(samplesDoneMsg{first.ch})
	if m.samplesEnd {
		t.Error("the old lab's end of samples ended the new one's")
	}
	m.Update(chanSampleMsg{ch: first.ch, s: fixedSamples()[5]})
	if m.nSamples != 0 {
		t.Error("a sample of the old lab was drawn")
	}
}

func TestPickerFailedStart(t *testing.T) {
	s := &starter{fail: errFake}
	m := New(newFake(), WithLessons(fakeLessons(3), s.start))
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(m, keyRunes("l"), tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyEnter})
	if v := ansi.Strip(m.View()); !strings.Contains(v, "lesson 02-lesson: admin API said no") {
		t.Errorf("failed start not shown:\n%s", v)
	}
	// Without lessons, l says so.
	m = New(newFake())
	press(m, keyRunes("l"))
	if m.pick.open || !strings.Contains(ansi.Strip(m.View()), "no lessons here") {
		t.Error("l without lessons")
	}
}
