package lab

import (
	"bytes"
	"testing"
)

// leveled is a Progress writer that implements ErrorWriter.
type leveled struct{ info, errs bytes.Buffer }

func (w *leveled) Write(p []byte) (int, error)      { return w.info.Write(p) }
func (w *leveled) WriteError(p []byte) (int, error) { return w.errs.Write(p) }

// Failure lines reach an ErrorWriter's WriteError, the rest its Write; a
// plain writer gets both, so stderr keeps every line.
func TestProgressSeverity(t *testing.T) {
	lw := &leveled{}
	l := &Lab{opts: Options{Progress: lw}}
	l.progress("fault apply model_errors %d%% all nodes", 50)
	l.progressErr("fault %s: %s", "node_kill", "admin API 500")
	_, _ = l.errorLog().Write([]byte("levee: recording to x: disk full\n"))
	if got, want := lw.info.String(), "fault apply model_errors 50% all nodes\n"; got != want {
		t.Errorf("Write got %q, want %q", got, want)
	}
	if got, want := lw.errs.String(), "fault node_kill: admin API 500\nlevee: recording to x: disk full\n"; got != want {
		t.Errorf("WriteError got %q, want %q", got, want)
	}

	var plain bytes.Buffer
	l = &Lab{opts: Options{Progress: &plain}}
	l.progress("info")
	l.progressErr("failure")
	if got := plain.String(); got != "info\nfailure\n" {
		t.Errorf("plain writer got %q", got)
	}
	if (&Lab{}).errorLog() != nil {
		t.Error("no Progress, yet an error log")
	}
}
