package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/term"

	"github.com/levee-lab/levee/lab/lesson"
)

func init() {
	register(command{
		name:    "lessons",
		summary: "list the lessons built into this binary (number, seed article, title, one line); NAME shows one",
		run:     runLessons,
	})
}

func runLessons(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("lessons", "lessons [NAME] [--dir DIR] [--yaml]", stderr)
	dir := fs.String("dir", "", "read the lessons from this folder's *.yaml instead of the ones built into the binary")
	asYAML := fs.Bool("yaml", false, "with NAME: print the lesson file itself (levee lessons 03 --yaml > 03.yaml)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "levee lessons: want at most one lesson NAME")
		fs.Usage()
		return 2
	}
	if *asYAML && fs.NArg() == 0 {
		fmt.Fprintln(stderr, "levee lessons: --yaml needs a lesson NAME")
		fs.Usage()
		return 2
	}
	var (
		lessons []lesson.Lesson
		err     error
	)
	if *dir != "" {
		lessons, err = lesson.LoadDir(*dir)
	} else {
		lessons, err = lesson.Embedded()
	}
	if err != nil {
		fmt.Fprintf(stderr, "levee lessons: %v\n", err)
		return 2
	}
	width := terminalWidth(stdout)
	if fs.NArg() == 0 {
		src, show := "built into this binary", "levee lessons NAME"
		if *dir != "" {
			src, show = "in "+*dir, "levee lessons --dir "+lesson.ShellQuote(*dir)+" NAME"
		}
		noun := "lessons"
		if len(lessons) == 1 {
			noun = "lesson"
		}
		fmt.Fprintf(stdout, "%d %s %s; %s shows one and how to play it.\n\n", len(lessons), noun, src, show)
		if err := lesson.WriteList(stdout, lessons, width); err != nil {
			fmt.Fprintf(stderr, "levee lessons: %v\n", err)
			return 1
		}
		return 0
	}
	l, err := lesson.Find(lessons, fs.Arg(0))
	if errors.Is(err, lesson.ErrAmbiguous) {
		fmt.Fprintf(stderr, "levee lessons: %v\n", err)
		return 2
	}
	if err != nil {
		names := make([]string, len(lessons))
		for i, l := range lessons {
			names[i] = l.Name
		}
		fmt.Fprintf(stderr, "levee lessons: no single lesson %q (known: %s)\n", fs.Arg(0), strings.Join(names, ", "))
		return 2
	}
	if *asYAML {
		_, err = stdout.Write(l.Source)
	} else {
		err = lesson.WriteDetail(stdout, l, width)
	}
	if err != nil {
		fmt.Fprintf(stderr, "levee lessons: %v\n", err)
		return 1
	}
	return 0
}

// terminalWidth is w's width in columns when w is a terminal, else 0 (no
// wrapping: pipes and files get whole lines).
func terminalWidth(w io.Writer) int {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(f.Fd()) {
		return 0
	}
	width, _, err := term.GetSize(f.Fd())
	if err != nil {
		return 0
	}
	return width
}
