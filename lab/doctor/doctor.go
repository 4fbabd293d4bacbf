// Package doctor checks that a machine is ready to run Levee in a workshop:
// a registry of small named checks (terminal, colours, loopback ports, CPU
// and load, memory, open files, the runs folder, Redis, the Go toolchain,
// tmux), each a func over an Env that tests replace piece by piece. A
// check never panics and never fails silently: every problem is a line
// saying what was found and exactly what to do.
package doctor

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/internal/textwrap"
)

// Status is a check's verdict.
type Status int

const (
	// OK: nothing to do.
	OK Status = iota
	// Warn: the workshop runs, but something could be better; Fix says what.
	Warn
	// Fail: something a lesson needs is missing; Fix says what to do.
	Fail
)

func (s Status) mark() string {
	switch s {
	case OK:
		return "✓"
	case Warn:
		return "!"
	}
	return "✗"
}

// Result is what one check found.
type Result struct {
	Status Status
	Found  string // what was found, in words a workshop attendee understands
	Fix    string // exactly what to do; "" when Status is OK
}

// CheckFunc inspects env. It must not panic and must not change the
// machine (a probe that creates something removes it).
type CheckFunc func(env *Env) Result

// Check is one named check of the registry.
type Check struct {
	Name string // short name: "terminal", "load", …
	Run  CheckFunc
}

// Env is the machine as the checks see it. System fills it from the real
// machine; tests replace any field.
type Env struct {
	// TermSize is the size of the terminal levee runs in; an error when
	// it does not run in one.
	TermSize func() (width, height int, err error)
	Getenv   func(key string) string
	LookPath func(file string) (string, error)
	Listen   func(network, address string) (net.Listener, error)
	NumCPU   int
	// LoadAvg is the 1, 5 and 15 minute load averages.
	LoadAvg func() ([3]float64, error)
	// MemAvailable is the memory programs can still get, in bytes.
	MemAvailable func() (uint64, error)
	// OpenFiles is this process's open-file limit (soft, which Go raises
	// to the hard limit at start, as it does in every lab child).
	OpenFiles func() (uint64, error)
	// NeedFiles is how many files and sockets one lab process may hold at
	// once (the lessons' largest max_outstanding, twice: the gateway holds a
	// client and an upstream socket per request, plus room for the rest).
	NeedFiles int
	// Executable is the path of the running binary.
	Executable func() (string, error)
	// HasCommand reports whether this levee binary has a subcommand.
	HasCommand func(name string) bool
	// RunsDir is where runs are recorded ("runs" by default).
	RunsDir string
	// WriteProbe checks that dir (or, when it does not exist yet, the
	// folder it will be created in) is writable, leaving nothing behind; it
	// returns the folder it wrote in.
	WriteProbe func(dir string) (string, error)
}

// Checks returns the registry in the order a report lists it.
func Checks() []Check {
	return []Check{
		{"terminal", checkTerminal},
		{"colours", checkColours},
		{"loopback", checkLoopback},
		{"cpu", checkCPU},
		{"load", checkLoad},
		{"memory", checkMemory},
		{"open files", checkOpenFiles},
		{"runs folder", checkRunsDir},
		{"redis", checkRedis},
		{"go", checkGo},
		{"tmux", checkTmux},
	}
}

// Named is one check's name and result.
type Named struct {
	Name string
	Result
}

// Report is the outcome of every check, in registry order.
type Report []Named

// Run runs each check on env. A check that panics (a bug) is reported as
// a failure naming the panic, and the other checks still run.
func Run(env *Env, checks []Check) Report {
	out := make(Report, 0, len(checks))
	for _, c := range checks {
		out = append(out, Named{Name: c.Name, Result: safeRun(c, env)})
	}
	return out
}

func safeRun(c Check, env *Env) (r Result) {
	defer func() {
		if v := recover(); v != nil {
			r = Result{Status: Fail, Found: fmt.Sprintf("the check itself failed: %v", v), Fix: "report this as a bug in levee doctor"}
		}
	}()
	return c.Run(env)
}

// Ready reports whether no check failed (warnings allowed).
func (r Report) Ready() bool {
	for _, n := range r {
		if n.Status == Fail {
			return false
		}
	}
	return true
}

// Write prints one line per check — mark, name, what was found — with the
// fix under it when there is one, then the verdict. width > 0 wraps the
// text to a terminal that many columns wide; width ≤ 0 leaves lines whole.
func (r Report) Write(w io.Writer, width int) error {
	var b strings.Builder
	b.WriteString("levee doctor · is this machine ready for a Levee workshop?\n\n")
	nameW := 0
	for _, n := range r {
		nameW = max(nameW, len(n.Name))
	}
	var fails, warns int
	for _, n := range r {
		indent := strings.Repeat(" ", 2+2+nameW+2)
		writeWrapped(&b, fmt.Sprintf("  %s %-*s  ", n.Status.mark(), nameW, n.Name), indent, n.Found, width)
		if n.Fix != "" {
			writeWrapped(&b, indent+"fix: ", indent+"     ", n.Fix, width)
		}
		switch n.Status {
		case Fail:
			fails++
		case Warn:
			warns++
		}
	}
	b.WriteString("\n")
	verdict := fmt.Sprintf("ready: %d checks passed%s.", len(r)-warns, warnNote(warns))
	if fails > 0 {
		verdict = fmt.Sprintf("not ready: %d problem%s (✗)%s. Do what the fix lines say and run levee doctor again.", fails, plural(fails), warnNote(warns))
	}
	writeWrapped(&b, "", "", verdict, width)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeWrapped writes first+text, wrapped to width columns with the
// following lines starting with indent (width ≤ 0: one line).
func writeWrapped(b *strings.Builder, first, indent, text string, width int) {
	lines := []string{text}
	if room := width - ansi.StringWidth(first); width > 0 && room >= 20 {
		lines = textwrap.Lines(text, room)
	}
	b.WriteString(first + lines[0] + "\n")
	for _, l := range lines[1:] {
		b.WriteString(indent + l + "\n")
	}
}

func warnNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d warning%s (!)", n, plural(n))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
