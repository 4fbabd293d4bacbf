package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/lesson"
)

// StartLesson stops the lab the dashboard shows — every child process —
// and starts the lesson's; it returns the new lab's Controls once its
// children are ready. It blocks: the dashboard calls it in a tea.Cmd.
// lab.Launcher.Launch is the usual implementation.
type StartLesson func(ctx context.Context, l lesson.Lesson) (lab.Controls, error)

// DefaultSwitchTimeout bounds a lesson switch: stopping the current lab
// (requests in flight drain for up to a client timeout) and starting the
// next one's children.
const DefaultSwitchTimeout = time.Minute

// WithLessons gives the dashboard a lesson picker (l) over lessons, which
// starts the chosen one with start.
func WithLessons(lessons []lesson.Lesson, start StartLesson) Option {
	return func(m *Model) {
		m.lessons, m.startLesson = lessons, start
	}
}

// picker is the lesson picker's state.
type picker struct {
	open bool
	sel  int // index into Model.lessons
	top  int // first lesson shown (scrolling)
}

// switchedMsg is the result of a lesson switch.
type switchedMsg struct {
	lesson lesson.Lesson
	ctrl   lab.Controls
	err    error
}

// openPicker shows the lesson picker with the running lesson selected.
func (m *Model) openPicker() {
	if len(m.lessons) == 0 || m.startLesson == nil {
		m.setStatus("no lessons here: levee lab lists them with l when it starts from the binary's lessons", true)
		return
	}
	m.pick.open, m.panelOpen, m.showHelp = true, false, false
	m.pick.sel = 0
	for i, l := range m.lessons {
		if l.Experiment != nil && l.Experiment.Title == m.lesson.Title {
			m.pick.sel = i
		}
	}
	m.scrollPicker()
}

// pickerRows is how the picker lays out in the charts' height: lines per
// lesson (2 with its one line, 1 when that does not fit) and lessons shown.
func (m *Model) pickerRows() (per, shown int) {
	h := 0
	for _, rh := range m.lay.rowH {
		h += rh
	}
	rows := h - 4 // borders, the blank line and the hint
	per = 2
	if rows < 2*len(m.lessons) {
		per = 1
	}
	return per, max(rows/per, 1)
}

// scrollPicker keeps the selected lesson within the lessons shown.
func (m *Model) scrollPicker() {
	_, shown := m.pickerRows()
	if m.pick.sel < m.pick.top {
		m.pick.top = m.pick.sel
	}
	if m.pick.sel >= m.pick.top+shown {
		m.pick.top = m.pick.sel - shown + 1
	}
	m.pick.top = max(min(m.pick.top, len(m.lessons)-shown), 0)
}

// pickerKey handles a key while the picker is open.
func (m *Model) pickerKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.PanelUp):
		m.pick.sel = max(m.pick.sel-1, 0)
		m.scrollPicker()
	case key.Matches(msg, k.PanelDown):
		m.pick.sel = min(m.pick.sel+1, len(m.lessons)-1)
		m.scrollPicker()
	case key.Matches(msg, k.PickStart):
		m.pick.open = false
		return m, m.switchTo(m.lessons[m.pick.sel])
	case key.Matches(msg, k.PanelClose), key.Matches(msg, k.Lessons):
		m.pick.open = false
	}
	return m, nil
}

// switchTo starts lesson l in place of the running lab, on a command
// goroutine: the old lab's children are stopped before the new ones start.
func (m *Model) switchTo(l lesson.Lesson) tea.Cmd {
	m.switching = l.Name
	m.setStatus(fmt.Sprintf("starting %s: stopping the current lab (load, faults, every child)…", l.Name), false)
	start, d := m.startLesson, m.switchTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		c, err := start(ctx, l)
		return switchedMsg{lesson: l, ctrl: c, err: err}
	}
}

// switched shows the new lab, or why there is none.
func (m *Model) switched(msg switchedMsg) tea.Cmd {
	m.switching = ""
	if msg.err != nil {
		m.setStatus(fmt.Sprintf("lesson %s: %v (l picks another, q quits)", msg.lesson.Name, msg.err), true)
		return nil
	}
	cmd := m.attach(msg.ctrl)
	m.setStatus(fmt.Sprintf("lesson %s started", msg.lesson.Name), false)
	return cmd
}

// pickerBox is the picker drawn over the charts, w wide: each lesson on
// two lines (number, seeds, title; its one line) when there is room, else
// one. It only reads the model (scrollPicker scrolls).
func (m *Model) pickerBox(w int) string {
	w = min(w, 120)
	iw := w - 2
	per, shown := m.pickerRows()
	numW, seedW := 2, 0
	for _, l := range m.lessons {
		numW = max(numW, ansi.StringWidth(clean(l.Number)))
		seedW = max(seedW, ansi.StringWidth(seedText(l)))
	}
	var body []string
	for i := m.pick.top; i < len(m.lessons) && i < m.pick.top+shown; i++ {
		l := m.lessons[i]
		mark := "  "
		if l.Experiment != nil && l.Experiment.Title == m.lesson.Title {
			mark = "● "
		}
		row := fmt.Sprintf("%s%-*s  %-*s  %s", mark, numW, clean(l.Number), seedW, seedText(l), clean(l.Title))
		if per == 1 && l.Line != "" {
			row += stDim.Render(" — " + clean(l.Line))
		}
		if i == m.pick.sel {
			body = append(body, "▸"+stSelected.Render(fit(row, iw-1)))
		} else {
			body = append(body, " "+fit(row, iw-1))
		}
		if per == 2 {
			indent := strings.Repeat(" ", 3+numW+2)
			body = append(body, stDim.Render(fit(indent+clean(l.Line), iw)))
		}
	}
	body = append(body, "", stDim.Render(" ↑/↓ choose · enter starts it (the running lab stops first) · esc closes"))
	count := fmt.Sprintf("lessons (%d)", len(m.lessons))
	if len(m.lessons) > shown {
		count = fmt.Sprintf("lessons %d–%d of %d", m.pick.top+1, min(m.pick.top+shown, len(m.lessons)), len(m.lessons))
	}
	title := fmt.Sprintf(" %s ", stTitle.Render(count))
	return box(title, w, len(body)+2, body)
}

// seedText is a lesson's seed articles: "seed 003 000", or "" when none.
func seedText(l lesson.Lesson) string {
	if len(l.Articles) == 0 {
		return ""
	}
	return clean("seed " + strings.Join(l.Articles, " "))
}
