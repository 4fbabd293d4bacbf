package main

import (
	"fmt"
	"io"

	"github.com/levee-lab/levee/lab/doctor"
	"github.com/levee-lab/levee/lab/lesson"
)

func init() {
	register(command{
		name:    "doctor",
		summary: "check this machine before a workshop (terminal, ports, CPU load, memory, Redis, …); exit 0 when ready",
		run:     runDoctor,
	})
}

func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("doctor", "doctor [--runs DIR]\n\n"+
		"Checks the terminal, loopback ports, CPU count and load, memory, the open-file\n"+
		"limit, the runs folder, Redis, Go and tmux, and says exactly what to fix.\n"+
		"Exit status: 0 ready (warnings allowed), 1 not ready, 2 bad usage.", stderr)
	runsDir := fs.String("runs", "runs", "folder runs are recorded in (as levee run --runs)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "levee doctor: takes no arguments")
		fs.Usage()
		return 2
	}
	lessons, err := lesson.Embedded()
	if err != nil {
		fmt.Fprintf(stderr, "levee doctor: %v\n", err)
		return 1
	}
	hasCommand := func(name string) bool { _, ok := commands[name]; return ok }
	env := doctor.System(*runsDir, hasCommand, doctor.NeedFiles(lesson.MaxOutstanding(lessons)))
	report := doctor.Run(env, doctor.Checks())
	if err := report.Write(stdout, terminalWidth(stdout)); err != nil {
		fmt.Fprintf(stderr, "levee doctor: %v\n", err)
		return 1
	}
	if !report.Ready() {
		return 1
	}
	return 0
}
