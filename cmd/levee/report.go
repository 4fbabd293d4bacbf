package main

import (
	"fmt"
	"io"

	"github.com/levee-lab/levee/lab/runfiles"
)

func init() {
	register(command{
		name:    "report",
		summary: "print recorded runs side by side (P0 success, lag, OOM kills, goodput, shed by reason, …)",
		run:     runReport,
	})
}

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", "report RUN_DIR [RUN_DIR…]", stderr)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "levee report: want at least one run folder")
		fs.Usage()
		return 2
	}
	var runs []*runfiles.Run
	for _, dir := range fs.Args() {
		r, err := runfiles.ReadRun(dir)
		if err != nil {
			fmt.Fprintf(stderr, "levee report: %v\n", err)
			return 1
		}
		runs = append(runs, r)
	}
	if err := runfiles.WriteReport(stdout, runs); err != nil {
		fmt.Fprintf(stderr, "levee report: %v\n", err)
		return 1
	}
	return 0
}
