package main

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runProc is a levee process under test whose stderr is read line by line
// as it comes.
type runProc struct {
	cmd    *exec.Cmd
	lines  chan string     // stderr's lines as they come; closed at its end
	stderr strings.Builder // all of stderr; read only after lines is closed
	exited chan struct{}   // closed once cmd.Wait returned werr
	werr   error
}

// startRunProc starts cmd (its stderr not yet set) and reads its stderr.
// A cleanup kills the process and waits for it, whatever happened.
func startRunProc(t *testing.T, cmd *exec.Cmd) *runProc {
	t.Helper()
	p := &runProc{cmd: cmd, lines: make(chan string, 1024), exited: make(chan struct{})}
	stderrR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderrR)
		for sc.Scan() {
			p.stderr.WriteString(sc.Text() + "\n")
			select {
			case p.lines <- sc.Text():
			default: // nobody waits for lines any more
			}
		}
	}()
	go func() {
		p.werr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// waitLine waits for a stderr line that ok accepts and returns it; it
// fails the test when the process ends first. The 2-minute deadline is a
// hang guard only: each wait ends on an event long before.
func (p *runProc) waitLine(t *testing.T, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case l, open := <-p.lines:
			if !open {
				t.Fatalf("the process ended while waiting for %s", what)
			}
			if ok(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %s on stderr", what)
		}
	}
}

// wait waits (2 minutes at most, a hang guard) for the process to end and
// for its stderr to be read to the end, and returns its exit status.
func (p *runProc) wait(t *testing.T, after string) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the process still runs 2 min after %s", after)
	}
	for range p.lines { // stderr read to its end
	}
	if ee, ok := p.werr.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if p.werr != nil {
		t.Fatalf("waiting for the process: %v", p.werr)
	}
	return 0
}

// progressTime returns the time of a levee run progress line with
// traffic ("t=  2.3s target 20/s offered 19/s ok …", offered not 0/s),
// and whether l is one.
func progressTime(l string) (time.Duration, bool) {
	rest, ok := strings.CutPrefix(l, "t=")
	f := strings.Fields(rest)
	if !ok || len(f) == 0 {
		return 0, false
	}
	at, err := time.ParseDuration(f[0])
	if err != nil {
		return 0, false
	}
	for i := 1; i+1 < len(f); i++ {
		if f[i] == "offered" {
			return at, f[i+1] != "0/s"
		}
	}
	return 0, false
}

// hasTraffic reports whether l is a progress line with traffic.
func hasTraffic(l string) bool { _, ok := progressTime(l); return ok }
