package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/htmlreport"
	"github.com/levee-lab/levee/lab/runfiles"
)

func init() {
	register(command{
		name:    "run",
		summary: "run an experiment headless and record it (runs/<time>-<name>/); non-zero exit when a threshold or a fault step fails",
		run:     runRun,
	})
}

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "run EXPERIMENT.yaml|LESSON [--out DIR [--force]] [--quick] [--html FILE]\n\n"+
		"Plays an experiment file, or a lesson built into the binary, headless and\n"+
		"records it; Ctrl-C (or SIGTERM) ends it early and still writes its files;\n"+
		"a second one, while it stops, kills every child at once. One while the\n"+
		"lab starts cancels the start.\n"+
		"Exit status: 0 every threshold held; 1 a threshold or a fault step failed,\n"+
		"or the run could not start (--out holds files, --runs is a file) or finish;\n"+
		"2 bad usage (an experiment that is neither a file nor a lesson, or does\n"+
		"not validate); 130 interrupted while the lab started, or killed by a\n"+
		"second interrupt.", stderr)
	out := fs.String("out", "", "run folder (default runs/<time>-<name>); refused when it holds files, unless --force")
	force := fs.Bool("force", false, "with --out: replace the run already in the folder (its run files are removed first)")
	runsDir := fs.String("runs", "runs", "parent folder of run folders when --out is not given")
	quick := fs.Bool("quick", false, "time-scale the experiment to about 20 s (stages, faults, narration)")
	quiet := fs.Bool("quiet", false, "no progress lines, only the result")
	htmlOut := fs.String("html", "", "when the run ends, also write its self-contained HTML report to `FILE`")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "levee run: want exactly one experiment file or lesson name")
		fs.Usage()
		return 2
	}
	if *force && *out == "" {
		fmt.Fprintln(stderr, "levee run: --force needs --out DIR (it replaces the run in that folder; a runs/<time>-<name> folder is always new)")
		return 2
	}
	runsGiven := false
	fs.Visit(func(f *flag.Flag) { runsGiven = runsGiven || f.Name == "runs" })
	if runsGiven && *out != "" {
		fmt.Fprintln(stderr, "levee run: --runs and --out: --out is the run folder itself, --runs the parent of a new runs/<time>-<name> folder; give one")
		return 2
	}
	exp, err := resolveExperiment(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "levee run: %v\n", err)
		return 2
	}
	if err := checkRunHTML(*htmlOut); err != nil {
		fmt.Fprintf(stderr, "levee run: %v\n", err)
		return 2
	}
	var progress io.Writer = stderr
	if *quiet {
		progress = nil
	}
	// SIGINT/SIGTERM while the lab starts cancel the start (the children
	// started so far are killed); once it runs they end the run early but
	// still write summary.json, and a second one, while it stops, kills
	// every child at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, runStopSignals()...)
	defer signal.Stop(sigs)
	l, interrupted, err := openRunLab(exp, lab.Options{
		Record: true, Out: *out, Force: *force, RunsDir: *runsDir, Quick: *quick,
		Args: append([]string{"levee", "run"}, args...), Progress: progress,
		Reports: []runfiles.ReportWriter{htmlreport.WriteRunReport},
	}, sigs)
	if err != nil && interrupted {
		fmt.Fprintf(stderr, "levee run: interrupted while the lab started; every child it started is stopped (%v)\n", err)
		return 130
	}
	if err != nil {
		fmt.Fprintf(stderr, "levee run: %v\n", err)
		return 1
	}
	dir := l.Dir()
	fmt.Fprintf(stderr, "levee run: %s → %s\n", exp.Name, dir)
	kill := interruptRun(l, sigs, interrupted, stderr)
	waited := make(chan error, 1)
	go func() { waited <- l.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-kill.done:
	}
	// A run the kill ended (Wait returns as its children die, perhaps
	// before Kill does) was killed, not finished.
	if kill.wait() {
		fmt.Fprintln(stderr, runKilledMsg)
		return 130
	}
	return reportRun(stdout, stderr, dir, l.Summary(), werr, *htmlOut)
}

// runStopSignals are the signals that stop a run: SIGINT, SIGTERM and
// SIGHUP (the terminal it ran in closed: the run still ends with its
// summary, as on Ctrl-C, instead of dying with a half-written folder).
// SIGHUP is left out when it is ignored — levee run under nohup — since
// watching it would undo nohup.
func runStopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// openRunLab opens the lab of a run; an interrupt on sigs before it is
// open cancels the start (lab.Open then kills the children it started
// and fails), and interrupted says so. An interrupt that came as the lab
// finished starting is reported the same way, with l open.
func openRunLab(exp *experiment.Experiment, opts lab.Options, sigs <-chan os.Signal) (l *lab.Lab, interrupted bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	opened := make(chan struct{})
	startSig := make(chan bool, 1) // an interrupt came while the lab started
	go func() {
		select {
		case <-sigs:
			cancel()
			startSig <- true
		case <-opened:
			startSig <- false
		}
	}()
	l, err = lab.Open(ctx, exp, opts)
	close(opened)
	cancel()
	return l, <-startSig, err
}

// reportRun prints a finished run's report and thresholds, writes its
// HTML page to htmlOut (when given) and returns levee run's exit status:
// 1 when the run has no summary or did not finish (werr), else the
// thresholds' verdict.
func reportRun(stdout, stderr io.Writer, dir string, sum *runfiles.Summary, werr error, htmlOut string) int {
	if sum == nil {
		fmt.Fprintf(stderr, "levee run: no summary: %v\n", werr)
		return 1
	}
	run := &runfiles.Run{Dir: dir, Summary: sum}
	if err := runfiles.WriteReport(stdout, []*runfiles.Run{run}); err != nil {
		fmt.Fprintf(stderr, "levee run: %v\n", err)
		return 1
	}
	printThresholds(stdout, sum)
	fmt.Fprintf(stdout, "\nrun folder: %s\n", dir)
	if htmlOut != "" {
		if err := htmlreport.WriteFile(htmlOut, dir); err != nil {
			fmt.Fprintf(stderr, "levee run: html report: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "html report: %s\n", htmlOut)
	}
	if werr != nil {
		fmt.Fprintf(stderr, "levee run: %v\n", werr)
		return 1
	}
	return runVerdict(stderr, sum)
}

// runKilledMsg is what levee run says when a second interrupt killed the
// lab.
const runKilledMsg = "levee run: second interrupt: every child process killed (SIGKILL); the run folder keeps what it wrote but may lack its summary and report"

// interruptRun handles the interrupts (runStopSignals) that sigs
// receives while l runs: the first (or one that came already, as the lab
// finished starting: first) stops the run (Lab.Stop: load ends, requests
// in flight finish, the recording is finished, every child is stopped
// within its grace); a second, while that stop is under way (a user who
// will not wait for it), kills every child at once (Lab.Kill) and
// says so in the returned runKill. It returns once set up; its goroutine
// ends when l has ended or after the kill.
func interruptRun(l *lab.Lab, sigs <-chan os.Signal, first bool, stderr io.Writer) *runKill {
	k := &runKill{started: make(chan struct{}), done: make(chan struct{})}
	ended := make(chan struct{})
	go func() {
		_ = l.Wait()
		close(ended)
	}()
	go func() {
		if !first {
			select {
			case <-sigs:
			case <-ended:
				return
			}
		}
		fmt.Fprintln(stderr, "levee run: stopping… (interrupt again to kill every child at once)")
		go func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = l.Stop(sctx)
		}()
		select {
		case <-sigs:
		case <-ended:
			return
		}
		close(k.started)
		l.Kill()
		close(k.done)
	}()
	return k
}

// runKill is the second interrupt's kill of a run: started closes before
// Lab.Kill, done after it returns.
type runKill struct {
	started, done chan struct{}
}

// wait reports whether the kill started; if so it waits for it to end.
func (k *runKill) wait() bool {
	select {
	case <-k.started:
		<-k.done
		return true
	default:
		return false
	}
}

// runVerdict reports on stderr why a finished run failed — a threshold
// failed, or a fault step of the experiment did not apply or revert, so
// the run did not play the experiment as written — and returns the exit
// code: 1 when either, else 0.
func runVerdict(stderr io.Writer, sum *runfiles.Summary) int {
	if sum.Ended == "stopped" {
		// Ctrl-C or SIGTERM: the thresholds were judged on the part that
		// ran, which a start-up ramp often fails; say so before the verdict.
		fmt.Fprintf(stderr, "levee run: stopped early, after %.1f s: the thresholds are judged on that part of the run\n", sum.DurationS)
	}
	fails := sum.FailedThresholds()
	for _, f := range fails {
		fmt.Fprintf(stderr, "levee run: threshold failed: %s\n", f)
	}
	for _, e := range sum.FaultStepErrors {
		fmt.Fprintf(stderr, "levee run: fault step failed: %s\n", e)
	}
	if len(fails) > 0 || len(sum.FaultStepErrors) > 0 {
		return 1
	}
	return 0
}

// checkRunHTML rejects an --html value before the run starts: "-" (stdout
// carries the run's table) or a path that cannot be written.
func checkRunHTML(path string) error {
	switch path {
	case "":
		return nil
	case "-":
		return fmt.Errorf("--html -: stdout carries the run's table; give a file name")
	}
	return checkHTMLPath(path)
}

// printThresholds lists the run's thresholds with their results.
func printThresholds(w io.Writer, sum *runfiles.Summary) {
	if len(sum.Thresholds) == 0 {
		return
	}
	fmt.Fprintln(w, "\nthresholds:")
	for _, name := range sortedThresholds(sum) {
		r := sum.Thresholds[name]
		mark := "✓"
		if !r.Pass {
			mark = "✗"
		}
		line := fmt.Sprintf("  %s %-26s %s %s", mark, name, r.Expr, fmtThresholdValue(r.Value))
		if r.Note != "" {
			line += "  (" + r.Note + ")"
		}
		fmt.Fprintln(w, line)
	}
}

func sortedThresholds(s *runfiles.Summary) []string {
	names := make([]string, 0, len(s.Thresholds))
	for n := range s.Thresholds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// fmtThresholdValue prints a threshold's measured value ("n/a" when it does
// not apply, "never" for a limit that never settled).
func fmtThresholdValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "(got n/a)"
	case math.IsInf(v, 1):
		return "(got never)"
	}
	return fmt.Sprintf("(got %.4g)", v)
}
