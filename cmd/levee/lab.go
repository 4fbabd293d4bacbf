package main

import (
	"fmt"
	"io"
	"os"

	"github.com/charmbracelet/x/term"
)

func init() {
	register(command{
		name:    "lab",
		summary: "start the lab with the live dashboard (what `levee` with no command runs)",
		run: func(args []string, stdout, stderr io.Writer) int {
			return runLab(args, os.Stdin, stdout, stderr)
		},
	})
}

// runLab is `levee lab [flags] [EXPERIMENT.yaml]`. stdin and stdout must be
// a terminal; without one it explains, points at `levee run`, and returns 2.
func runLab(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("lab", "lab [flags] [EXPERIMENT.yaml]", stderr)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "levee lab: at most one experiment file, got %d arguments\n", fs.NArg())
		fs.Usage()
		return 2
	}
	if !isTerminal(stdin) || !isTerminal(stdout) {
		noTerminal(stderr, fs.Arg(0))
		return 2
	}
	fmt.Fprintln(stderr, "levee lab: the lab runner is not wired in yet")
	return 1
}

// noTerminal explains why the dashboard cannot start and what to run instead.
func noTerminal(stderr io.Writer, exp string) {
	if exp == "" {
		exp = "EXPERIMENT.yaml"
	}
	fmt.Fprintln(stderr, "levee lab: the live dashboard needs a terminal, and stdin or stdout is not one.")
	fmt.Fprintf(stderr, "To run an experiment without a dashboard (scripts, CI, pipes): levee run %s\n", exp)
}

// isTerminal reports whether f is a terminal (an *os.File on a TTY).
func isTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(fd.Fd())
}
