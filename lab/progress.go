package lab

import (
	"fmt"
	"io"
)

// ErrorWriter is implemented by a Progress writer that wants the lines
// reporting a failure (a fault that did not apply, a failover that did not
// happen, a recording that cannot write) apart from the other progress
// lines, so that a dashboard can show them as errors without guessing from
// their words. A writer without it gets every line through Write.
type ErrorWriter interface {
	WriteError(p []byte) (int, error)
}

// progress writes one line of progress: something that happened.
func (l *Lab) progress(format string, args ...any) {
	if l.opts.Progress != nil {
		fmt.Fprintf(l.opts.Progress, format+"\n", args...)
	}
}

// progressErr writes one line that reports a failure.
func (l *Lab) progressErr(format string, args ...any) {
	if w := l.errorLog(); w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// errorLog is the Progress writer for failure lines (nil without Progress).
func (l *Lab) errorLog() io.Writer {
	if l.opts.Progress == nil {
		return nil
	}
	if ew, ok := l.opts.Progress.(ErrorWriter); ok {
		return errorLines{ew}
	}
	return l.opts.Progress
}

// errorLines sends everything written to it to WriteError.
type errorLines struct{ w ErrorWriter }

func (e errorLines) Write(p []byte) (int, error) { return e.w.WriteError(p) }
