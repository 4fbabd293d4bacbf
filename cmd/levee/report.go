package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/levee-lab/levee/lab/htmlreport"
	"github.com/levee-lab/levee/lab/runfiles"
)

func init() {
	register(command{
		name:    "report",
		summary: "print recorded runs side by side (P0 success, lag, OOM kills, goodput, shed by reason, …); --html FILE draws them",
		run:     runReport,
	})
}

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", "report [--html FILE] RUN_DIR [RUN_DIR…]", stderr)
	htmlOut := fs.String("html", "", "also write one self-contained HTML page of the runs (charts over time, A/B overlaid) to `FILE`; - for stdout instead of the table")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "levee report: want at least one run folder")
		fs.Usage()
		return 2
	}
	for _, dir := range fs.Args() {
		if err := checkRunDir(dir); err != nil {
			fmt.Fprintf(stderr, "levee report: %v\n", err)
			return 2
		}
	}
	if *htmlOut != "" {
		if err := checkHTMLPath(*htmlOut); err != nil {
			fmt.Fprintf(stderr, "levee report: %v\n", err)
			return 2
		}
		if fs.NArg() > htmlreport.MaxRuns {
			fmt.Fprintf(stderr, "levee report: --html draws at most %d runs, got %d\n", htmlreport.MaxRuns, fs.NArg())
			return 2
		}
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
	if *htmlOut == "-" {
		if err := writeHTML(stdout, fs.Args()); err != nil {
			fmt.Fprintf(stderr, "levee report: %v\n", err)
			return 1
		}
		return 0
	}
	if err := runfiles.WriteReport(stdout, runs); err != nil {
		fmt.Fprintf(stderr, "levee report: %v\n", err)
		return 1
	}
	if *htmlOut != "" {
		if err := htmlreport.WriteFile(*htmlOut, fs.Args()...); err != nil {
			fmt.Fprintf(stderr, "levee report: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "levee report: wrote %s\n", *htmlOut)
	}
	return 0
}

// writeHTML writes the HTML report of dirs to w.
func writeHTML(w io.Writer, dirs []string) error {
	runs := make([]*htmlreport.Run, 0, len(dirs))
	for _, d := range dirs {
		r, err := htmlreport.Load(d)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	return htmlreport.Write(w, runs...)
}

// checkHTMLPath rejects an HTML report path that cannot be written, before
// any work is done: its folder must exist and it must not be a folder.
func checkHTMLPath(path string) error {
	if path == "-" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--html %s: is a folder; want a file name", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--html %s: %s is not a folder", path, dir)
	}
	return nil
}

// checkRunDir rejects a RUN_DIR argument that is not a folder (missing, a
// file, or one that cannot be examined) before any run is read, naming it;
// a folder that does not hold a readable run is ReadRun's to report.
func checkRunDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("run folder %s: no such folder (want the folder a run left: runs/<time>-<name>)", dir)
	case err != nil:
		return fmt.Errorf("run folder %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("run folder %s: not a folder (want the folder a run left: runs/<time>-<name>)", dir)
	}
	return nil
}
