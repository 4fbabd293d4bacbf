package lesson

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/levee-lab/levee/lab/experiment"
)

// WriteDetail prints one lesson for a facilitator: what it is about, its
// steps (predict → watch → explain) with their times, its faults and the
// thresholds a run must pass. width as in WriteList.
func WriteDetail(w io.Writer, l Lesson, width int) error {
	var b strings.Builder
	para := func(indent, s string) {
		for _, line := range wrap(s, width-len(indent)) {
			b.WriteString(indent + line + "\n")
		}
	}
	file := "experiments/" + l.File
	if l.Path != "" {
		file = l.Path
	}
	fmt.Fprintf(&b, "%s · %s\n", l.Number, l.Title)
	fmt.Fprintf(&b, "name %s · seed articles %s · file %s\n\n", l.Name, seeds(l), file)
	e := l.Experiment
	para("", strings.Join(strings.Fields(e.Description), " "))
	if len(e.Narration) > 0 {
		b.WriteString("\nsteps\n")
		for i, s := range e.Narration {
			head := fmt.Sprintf("  %6s %-8s ", s.At, s.Kind)
			lines := wrap(s.Text, width-len(head))
			if s.Predict != nil {
				lines = append(lines, wrap("→ asks for a number: "+s.Predict.AskedQuestion()+" "+measuredWhen(e, i), width-len(head))...)
			}
			b.WriteString(head + lines[0] + "\n")
			for _, line := range lines[1:] {
				b.WriteString(strings.Repeat(" ", len(head)) + line + "\n")
			}
		}
	}
	if len(e.Faults) > 0 {
		b.WriteString("\nfaults\n")
		for _, f := range e.Faults {
			line := fmt.Sprintf("  at %s  %s", f.At, f.Fault)
			if f.For > 0 {
				line += fmt.Sprintf(" for %s", f.For)
			}
			b.WriteString(line + "\n")
		}
	}
	if len(e.Thresholds) > 0 {
		b.WriteString("\nthresholds (a run passes when all hold)\n")
		names := make([]string, 0, len(e.Thresholds))
		for n := range e.Thresholds {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "  %-26s %s\n", n, e.Thresholds[n])
		}
	}
	if l.Path != "" {
		// Not built into the binary: the commands must name the file.
		path := ShellQuote(l.Path)
		fmt.Fprintf(&b, "\nplay it live:      levee lab %s\n", path)
		fmt.Fprintf(&b, "record it (20 s):  levee run --quick %s\n", path)
		fmt.Fprintf(&b, "the file itself:   %s\n", path)
	} else {
		fmt.Fprintf(&b, "\nplay it live:      levee lab %s   (or l in the dashboard)\n", l.Name)
		fmt.Fprintf(&b, "record it (20 s):  levee run --quick %s\n", l.Name)
		fmt.Fprintf(&b, "the file itself:   levee lessons %s --yaml > %s\n", l.Name, l.File)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// measuredWhen says over which part of the lesson predict step i's number
// is measured.
func measuredWhen(e *experiment.Experiment, i int) string {
	p := e.Narration[i].Predict
	end := "the end of the run"
	if j := e.MeasuredAt(i); j >= 0 {
		end = fmt.Sprintf("the explain step at %s", e.Narration[j].At)
	}
	if p.To != 0 {
		end = p.To.String()
	}
	return fmt.Sprintf("(measured from %s to %s)", e.MeasureFrom(i), end)
}

// ShellQuote returns s as one shell word: as it is when it holds only
// characters no shell treats specially, else in single quotes.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+,:@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
