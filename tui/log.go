package tui

import (
	"bytes"
	"io"
	"strings"
	"sync"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/levee-lab/levee/lab"
)

// Log is an io.Writer for the lab's human progress lines (lab.Options.
// Progress). Before and after the dashboard it passes lines to its
// underlying writer (usually stderr); while a dashboard made WithLog shows,
// it hands them to the status line instead, so nothing scribbles over the
// screen. It is also a lab.ErrorWriter: the lines the lab writes through
// WriteError report failures and show as errors; everything else is
// information, whatever words it holds ("fault apply model_errors …" is a
// success). A full buffer drops lines; Write never blocks. Safe for
// concurrent use.
//
// Captured lines wait in the Log until the dashboard's Update takes them
// (a command only waits for the signal that there are some): a line the
// dashboard never took — written while it quit, or while Run stops the
// lab after the program ended — goes to the underlying writer on release
// instead of being lost with a command goroutine the program left behind.
type Log struct {
	mu         sync.Mutex
	w          io.Writer // guarded by mu
	capture    bool      // guarded by mu: lines go to pending, not w
	partial    []byte    // guarded by mu: an unfinished line
	partialErr []byte    // guarded by mu: an unfinished error line
	pending    []logLine // guarded by mu: captured lines not taken yet
	ready      chan struct{}
	skip       func(line string) bool
}

// maxPending bounds the captured lines not taken yet; more are dropped.
const maxPending = 64

// logLine is one captured line and whether its writer said it reports a
// failure.
type logLine struct {
	text  string
	isErr bool
}

var _ lab.ErrorWriter = (*Log)(nil)

// NewLog returns a Log passing lines to w until a dashboard captures it.
// While captured, lines for which skip returns true are dropped (nil skip
// keeps every line): e.g. periodic progress that repeats what the charts
// show.
func NewLog(w io.Writer, skip func(line string) bool) *Log {
	return &Log{w: w, ready: make(chan struct{}, 1), skip: skip}
}

// Write implements io.Writer: lines of information.
func (l *Log) Write(p []byte) (int, error) { return l.write(p, false) }

// WriteError implements lab.ErrorWriter: lines that report a failure.
func (l *Log) WriteError(p []byte) (int, error) { return l.write(p, true) }

func (l *Log) write(p []byte, isErr bool) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.capture {
		return l.w.Write(p)
	}
	// Each kind keeps its own unfinished line, so a failure written in
	// pieces is not glued to an information line written in between.
	partial := &l.partial
	if isErr {
		partial = &l.partialErr
	}
	*partial = append(*partial, p...)
	for {
		i := bytes.IndexByte(*partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string((*partial)[:i]))
		*partial = (*partial)[i+1:]
		if line == "" || (l.skip != nil && l.skip(line)) || len(l.pending) >= maxPending {
			continue
		}
		l.pending = append(l.pending, logLine{line, isErr})
		select {
		case l.ready <- struct{}{}:
		default: // a signal is already waiting
		}
	}
	return len(p), nil
}

// take returns the captured lines not taken yet, oldest first.
func (l *Log) take() []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.pending
	l.pending = nil
	return out
}

func (l *Log) setCapture(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.capture = on
	if on {
		return
	}
	for _, ln := range l.pending {
		_, _ = io.WriteString(l.w, ln.text+"\n")
	}
	l.pending = nil
	for _, p := range []*[]byte{&l.partial, &l.partialErr} {
		if len(*p) > 0 {
			_, _ = l.w.Write(append(*p, '\n'))
			*p = nil
		}
	}
}

// writeShown writes the errors the dashboard showed, whole, to the
// underlying writer (once the dashboard is gone), under a heading; none:
// nothing.
func (l *Log) writeShown(errs []string) {
	if len(errs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	b.WriteString("errors the dashboard showed, in full:\n")
	for _, e := range errs {
		b.WriteString("  ✕ " + e + "\n")
	}
	_, _ = io.WriteString(l.w, b.String())
}

type (
	logMsg      logLine  // one line for the status line
	logReadyMsg struct{} // the Log holds lines to take
)

// waitLog waits until the Log holds lines; Update takes them.
func waitLog(l *Log) tea.Cmd {
	return func() tea.Msg {
		<-l.ready
		return logReadyMsg{}
	}
}

// WithLog shows the lab's progress lines written to l in the status line
// while the dashboard runs (Run captures l and releases it on return).
func WithLog(l *Log) Option {
	return func(m *Model) { m.log = l }
}

// showLog shows a progress line of the lab in the status line. The lab
// says which lines report a failure (lab.ErrorWriter); the words of a line
// do not: "fault apply model_errors" and "redis: failover: … in 2.6s" are
// successes.
func (m *Model) showLog(ln logLine) {
	line := ln.text
	if m.stopping {
		line = "stopping… " + line
	}
	m.setStatus(line, ln.isErr)
}
