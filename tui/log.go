package tui

import (
	"bytes"
	"io"
	"strings"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
)

// Log is an io.Writer for the lab's human progress lines (lab.Options.
// Progress). Before and after the dashboard it passes lines to its
// underlying writer (usually stderr); while a dashboard made WithLog shows,
// it hands them to the status line instead, so nothing scribbles over the
// screen. A full buffer drops lines; Write never blocks. Safe for
// concurrent use.
type Log struct {
	mu      sync.Mutex
	w       io.Writer // guarded by mu
	capture bool      // guarded by mu: lines go to ch, not w
	partial []byte    // guarded by mu: an unfinished line
	ch      chan string
	skip    func(line string) bool
}

// NewLog returns a Log passing lines to w until a dashboard captures it.
// While captured, lines for which skip returns true are dropped (nil skip
// keeps every line): e.g. periodic progress that repeats what the charts
// show.
func NewLog(w io.Writer, skip func(line string) bool) *Log {
	return &Log{w: w, ch: make(chan string, 64), skip: skip}
}

// Write implements io.Writer.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.capture {
		return l.w.Write(p)
	}
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
		if line == "" || (l.skip != nil && l.skip(line)) {
			continue
		}
		select {
		case l.ch <- line:
		default:
		}
	}
	return len(p), nil
}

func (l *Log) setCapture(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.capture = on
	if !on && len(l.partial) > 0 {
		_, _ = l.w.Write(append(l.partial, '\n'))
		l.partial = nil
	}
}

type logMsg string

func waitLog(l *Log) tea.Cmd {
	return func() tea.Msg { return logMsg(<-l.ch) }
}

// WithLog shows the lab's progress lines written to l in the status line
// while the dashboard runs (Run captures l and releases it on return).
func WithLog(l *Log) Option {
	return func(m *Model) { m.log = l }
}
