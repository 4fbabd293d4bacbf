package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/charmbracelet/x/term"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/htmlreport"
	"github.com/levee-lab/levee/lab/runfiles"
	"github.com/levee-lab/levee/tui"
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

// runLab is `levee lab [flags] [EXPERIMENT.yaml]`: it opens the lab (the
// default experiment, or the file given) and shows the dashboard over it
// until the user quits; quitting stops every child. stdin and stdout must be
// a terminal; without one it explains, points at `levee run`, and returns 2
// before starting anything.
func runLab(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("lab", "lab [flags] [EXPERIMENT.yaml]", stderr)
	record := fs.Bool("record", false, "record from the start into a run folder, as levee run does (r toggles recording at any time)")
	runsDir := fs.String("runs", "runs", "`folder` for run folders")
	quick := fs.Bool("quick", false, "time-scale the experiment to about 20 s")
	stopTimeout := fs.Duration("stop-timeout", tui.DefaultStopTimeout, "how long quitting waits for load to drain and children to stop")
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
	exp := experiment.DefaultExperiment()
	if path := fs.Arg(0); path != "" {
		var err error
		if exp, err = experiment.LoadExperiment(path); err != nil {
			fmt.Fprintf(stderr, "levee lab: %v\n", err)
			return 2
		}
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	// While the dashboard shows, the lab's progress lines go to its status
	// line, except the once-a-second "t= …" line (the charts show it) and
	// narration lines "[kind] text" (the lesson row shows them).
	log := tui.NewLog(stderr, func(line string) bool {
		return strings.HasPrefix(line, "t=") || narrationLine.MatchString(line)
	})
	fmt.Fprintf(stderr, "levee lab: starting %s (ctrl+c aborts)…\n", exp.Name)
	l, err := lab.Open(ctx, exp, lab.Options{
		Record:   *record,
		RunsDir:  *runsDir,
		Quick:    *quick,
		Args:     append([]string{"lab"}, args...),
		Progress: log,
		Reports:  []runfiles.ReportWriter{htmlreport.WriteRunReport},
	})
	if err != nil {
		fmt.Fprintf(stderr, "levee lab: %v\n", err)
		return 1
	}
	runErr := tui.Run(ctx, l, stdin, stdout, tui.WithStopTimeout(*stopTimeout), tui.WithLog(log))
	if runErr != nil {
		// The dashboard already asked the lab to stop; make sure it did.
		sctx, scancel := context.WithTimeout(context.Background(), *stopTimeout)
		_ = l.Stop(sctx)
		scancel()
		fmt.Fprintf(stderr, "levee lab: %v\n", runErr)
		return 1
	}
	if err := l.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "levee lab: %v\n", err)
		return 1
	}
	fmt.Fprintln(stderr, "levee lab: stopped; every child process has exited")
	return 0
}

var narrationLine = regexp.MustCompile(`^\[(predict|watch|explain)\] `)

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
