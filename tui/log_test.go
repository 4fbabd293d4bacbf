package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/lab"
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
	if got := l.take(); len(got) != 1 || got[0] != (logLine{text: "fault node_kill: error: admin API 500"}) {
		t.Errorf("captured lines %+v", got)
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
	if got := l.take(); len(got) != maxPending {
		t.Errorf("buffer holds %d lines, want %d", len(got), maxPending)
	}
}

// The status line shows a captured line as an error only when the lab
// wrote it as one (lab.ErrorWriter), whatever its words say.
func TestLogShowsInStatusLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		isErr   bool
		wantErr bool
	}{
		{name: "a fault that applied, named model_errors", line: "fault apply model_errors 50% all nodes"},
		{name: "a Redis failover that happened", line: "redis: failover: master 127.0.0.1:7001 → replica 127.0.0.1:7004 in 2.6s"},
		{name: "a fault that failed", line: "fault node_kill: admin API 500", isErr: true, wantErr: true},
		{name: "a failure without the word", line: "redis: master 127.0.0.1:7001 lost, no failover: context deadline exceeded", isErr: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w lab.ErrorWriter = NewLog(&bytes.Buffer{}, nil)
			l := w.(*Log)
			l.setCapture(true)
			m := New(newFake(), WithLog(l))
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
			if tt.isErr {
				_, _ = l.WriteError([]byte(tt.line + "\n"))
			} else {
				fmt.Fprintln(l, tt.line)
			}
			m.Update(waitLog(l)())
			v := ansi.Strip(m.View())
			if !strings.Contains(v, tt.line) {
				t.Fatalf("status line lacks %q:\n%s", tt.line, v)
			}
			if got := strings.Contains(v, "✕ "+tt.line); got != tt.wantErr {
				t.Errorf("shown as an error: %t, want %t:\n%s", got, tt.wantErr, v)
			}
		})
	}
}

// An error line written in pieces is not mixed with information written in
// between, and a line left unfinished is passed on at release.
func TestLogKeepsErrorLinesApart(t *testing.T) {
	var out bytes.Buffer
	l := NewLog(&out, nil)
	l.setCapture(true)
	_, _ = l.WriteError([]byte("fault node_kill: "))
	fmt.Fprintln(l, "fault apply cpu_hog")
	_, _ = l.WriteError([]byte("admin API 500\nhalf"))
	want := []logLine{{text: "fault apply cpu_hog"}, {text: "fault node_kill: admin API 500", isErr: true}}
	if got := l.take(); !reflect.DeepEqual(got, want) {
		t.Errorf("captured %+v, want %+v", got, want)
	}
	l.setCapture(false)
	if out.String() != "half\n" {
		t.Errorf("after release, stderr got %q", out.String())
	}
}

// TestLogNotLostAtExit: a line the dashboard never showed reaches the
// log's writer. A command goroutine the program left behind used to take
// it from the channel and hand it to a program that had ended, and Run
// stopped the lab (ctx cancelled, a signal) with the log still captured,
// so every line the lab wrote while stopping was lost, failures included.
func TestLogNotLostAtExit(t *testing.T) {
	t.Run("taken by a command of an ended program", func(t *testing.T) {
		var out bytes.Buffer
		l := NewLog(&out, nil)
		l.setCapture(true)
		done := make(chan tea.Msg, 1)
		go func() { done <- waitLog(l)() }() // its program has ended
		_, _ = l.WriteError([]byte("fault cpu_hog: revert: admin API 500\n"))
		<-done // the message is dropped: no Update runs any more
		l.setCapture(false)
		if !strings.Contains(out.String(), "fault cpu_hog: revert: admin API 500\n") {
			t.Errorf("the writer got %q", out.String())
		}
	})
	t.Run("written while Run stops the lab", func(t *testing.T) {
		var out bytes.Buffer // written by Run's goroutine, read after it returned
		l := NewLog(&out, nil)
		f := newFake()
		f.onStop = func() { _, _ = l.WriteError([]byte("gateway-0: stop: still running after 5s\n")) }
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		defer pw.Close()
		done := make(chan error, 1)
		go func() { done <- Run(ctx, f, pr, io.Discard, WithLog(l)) }()
		f.ch <- fixedSamples()[0]
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !strings.Contains(out.String(), "gateway-0: stop: still running after 5s\n") {
			t.Errorf("the writer got %q", out.String())
		}
	})
}
