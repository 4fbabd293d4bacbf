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
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/htmlreport"
	"github.com/levee-lab/levee/lab/lesson"
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

// runLab is `levee lab [flags] [EXPERIMENT.yaml | LESSON]`: it opens the
// lab (the default experiment, a file, or a lesson built into the binary)
// and shows the dashboard over it until the user quits; its lesson picker
// (l) switches to any lesson, stopping the running lab first. Quitting
// stops every child. A bad argument (an experiment that is neither a file
// nor a lesson, a --stop-timeout not above 0, a --runs that is a file) is
// reported first and returns 2. stdin and stdout must be a terminal;
// without one it explains, points at `levee run`, and returns 2 before
// starting anything.
func runLab(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("lab", "lab [flags] [EXPERIMENT.yaml | LESSON]\n\n"+
		"Starts the lab (no argument: the default one) and its live dashboard.\n"+
		"Exit status: 0 quit (q); 1 the lab failed to start or stop; 2 bad usage,\n"+
		"or stdin or stdout is not a terminal (use levee run); 130 a second\n"+
		"interrupt killed every child.", stderr)
	record := fs.Bool("record", false, "record from the start into a run folder, as levee run does (r toggles recording at any time)")
	runsDir := fs.String("runs", "runs", "`folder` for run folders")
	quick := fs.Bool("quick", false, "time-scale the experiment to about 20 s")
	stopTimeout := fs.Duration("stop-timeout", tui.DefaultStopTimeout, "how long quitting waits for load to drain and children to stop")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "levee lab: at most one experiment file or lesson, got %d arguments\n", fs.NArg())
		fs.Usage()
		return 2
	}
	// Arguments before the terminal: a typo is reported as itself, not
	// hidden behind the hint (a levee run that fails the same way).
	exp, err := labArgs(fs.Arg(0), *stopTimeout, *runsDir)
	if err != nil {
		fmt.Fprintf(stderr, "levee lab: %v\n", err)
		return 2
	}
	if !isTerminal(stdin) || !isTerminal(stdout) {
		noTerminal(stderr, fs.Arg(0))
		return 2
	}
	lessons, err := lesson.Embedded()
	if err != nil { // a lesson built into the binary does not parse: a build defect
		fmt.Fprintf(stderr, "levee lab: %v\n", err)
		return 1
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
	launcher := lab.NewLauncher(lab.Options{
		Record:   *record,
		RunsDir:  *runsDir,
		Quick:    *quick,
		Args:     append([]string{"lab"}, args...),
		Progress: log,
		Reports:  []runfiles.ReportWriter{htmlreport.WriteRunReport},
	})
	l, err := launcher.Launch(ctx, exp)
	if err != nil {
		fmt.Fprintf(stderr, "levee lab: %v\n", err)
		return 1
	}
	start := func(ctx context.Context, ls lesson.Lesson) (lab.Controls, error) {
		return launcher.Launch(ctx, ls.Experiment)
	}
	runErr := tui.Run(ctx, l, stdin, stdout, tui.WithStopTimeout(*stopTimeout), tui.WithLog(log), tui.WithLessons(lessons, start),
		tui.WithKill(launcher.Kill))
	if errors.Is(runErr, tui.ErrKilled) {
		launcher.Kill() // also a lab a lesson switch was opening
		fmt.Fprintln(stderr, killedMsg)
		return 130
	}
	// The dashboard stopped the lab it showed; Close also cancels a
	// lesson switch still starting (the children it started are killed,
	// its work folder removed) rather than wait for it. An
	// interrupt meanwhile (the terminal is the shell's again: ctrl+c is
	// SIGINT) is a second one: it kills the children at once.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	closed := make(chan error, 1)
	go func() {
		sctx, scancel := context.WithTimeout(context.Background(), *stopTimeout)
		defer scancel()
		closed <- launcher.Close(sctx)
	}()
	var closeErr error
	select {
	case closeErr = <-closed:
	case <-sigs:
		launcher.Kill()
		fmt.Fprintln(stderr, killedMsg)
		return 130
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "levee lab: %v\n", runErr)
		return 1
	}
	if closeErr != nil && !errors.Is(closeErr, context.Canceled) {
		fmt.Fprintf(stderr, "levee lab: %v\n", closeErr)
		return 1
	}
	fmt.Fprintln(stderr, "levee lab: stopped; every child process has exited")
	return 0
}

// labArgs checks levee lab's arguments and returns the experiment to
// open: the default lab without one, else the file or lesson arg names.
func labArgs(arg string, stopTimeout time.Duration, runsDir string) (*experiment.Experiment, error) {
	if stopTimeout <= 0 {
		return nil, fmt.Errorf("--stop-timeout %v: want > 0", stopTimeout)
	}
	if st, err := os.Stat(runsDir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("--runs %s: not a folder (recordings go in a folder of run folders)", runsDir)
	}
	if arg == "" {
		return experiment.DefaultExperiment(), nil
	}
	return resolveExperiment(arg)
}

// killedMsg is what levee lab says when a second interrupt killed the lab.
const killedMsg = "levee lab: second interrupt: every child process killed (SIGKILL), its work folder removed; a recording keeps what it wrote but may lack its summary and report"

var narrationLine = regexp.MustCompile(`^\[(predict|watch|explain)\] `)

// noTerminal explains why the dashboard cannot start and what to run instead.
func noTerminal(stderr io.Writer, exp string) {
	if exp == "" {
		exp = "EXPERIMENT.yaml|LESSON"
	}
	fmt.Fprintln(stderr, "levee lab: the live dashboard needs a terminal, and stdin or stdout is not one.")
	fmt.Fprintf(stderr, "To run an experiment without a dashboard (scripts, CI, pipes): levee run %s\n", exp)
}

// isTerminal reports whether f is a terminal (an *os.File on a TTY).
func isTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(fd.Fd())
}

// resolveExperiment reads arg as an experiment file when one is there,
// else as the name or number of a lesson built into the binary
// ("03-priority-shedding", "03", "3"). When neither fits, the error says
// what arg is on disk: missing, a folder, or a path it cannot look at.
func resolveExperiment(arg string) (*experiment.Experiment, error) {
	st, statErr := os.Stat(arg)
	if statErr == nil && !st.IsDir() {
		return experiment.LoadExperiment(arg)
	}
	lessons, err := lesson.Embedded()
	if err != nil {
		return nil, err
	}
	l, err := lesson.Find(lessons, arg)
	if err == nil {
		return l.Experiment.Clone(), nil
	}
	if errors.Is(err, lesson.ErrAmbiguous) {
		return nil, fmt.Errorf("%s: no such file, and %w", arg, err)
	}
	names := make([]string, len(lessons))
	for i, l := range lessons {
		names[i] = l.Name
	}
	known := strings.Join(names, ", ")
	switch {
	case statErr == nil: // a folder
		return nil, fmt.Errorf("%s is a folder, not an experiment file, and no single lesson by that name (levee lessons lists them: %s)", arg, known)
	case !errors.Is(statErr, os.ErrNotExist):
		return nil, fmt.Errorf("%w, and no single lesson by that name (levee lessons lists them: %s)", statErr, known)
	}
	return nil, fmt.Errorf("%s: no such file, and no single lesson by that name (levee lessons lists them: %s)", arg, known)
}
