package tui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

func TestLogPassThroughAndCapture(t *testing.T) {
	var out bytes.Buffer
	l := NewLog(&out, func(line string) bool { return strings.HasPrefix(line, "t=") })
	fmt.Fprintln(l, "starting 3 nodes")
	l.setCapture(true)
	fmt.Fprintln(l, "t= 6.5s target 278/s")
	fmt.Fprint(l, "fault node_kill: ")
	fmt.Fprintln(l, "error: admin API 500")
	fmt.Fprint(l, "half a line")
	if got := out.String(); got != "starting 3 nodes\n" {
		t.Errorf("while captured, stderr got %q", got)
	}
	if got := <-l.ch; got != "fault node_kill: error: admin API 500" {
		t.Errorf("captured line %q", got)
	}
	l.setCapture(false)
	if got := out.String(); got != "starting 3 nodes\nhalf a line\n" {
		t.Errorf("after release, stderr got %q", got)
	}
	// A full buffer drops lines instead of blocking.
	l.setCapture(true)
	for i := 0; i < 200; i++ {
		fmt.Fprintln(l, "line", i)
	}
	if len(l.ch) != cap(l.ch) {
		t.Errorf("buffer holds %d lines, want %d", len(l.ch), cap(l.ch))
	}
}

func TestLogShowsInStatusLine(t *testing.T) {
	l := NewLog(&bytes.Buffer{}, nil)
	l.setCapture(true)
	m := New(newFake(), WithLog(l))
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	fmt.Fprintln(l, "fault node_kill: error restarting node 2")
	msg := waitLog(l)()
	m.Update(msg)
	if v := ansi.Strip(m.View()); !strings.Contains(v, "✕ fault node_kill: error restarting node 2") {
		t.Errorf("status line lacks the log line as an error:\n%s", v)
	}
}
