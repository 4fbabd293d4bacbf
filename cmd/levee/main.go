// Command levee runs the Levee backpressure lab: a real AI gateway in front of
// fake, slow model backends, open-loop load, chaos faults and a live dashboard.
//
// Each subcommand lives in its own file and registers itself in init, so the
// command table stays the only shared piece of this package.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand. run receives the arguments after the
// subcommand's name and returns the process exit code: 0 success, 1 failure,
// 2 bad usage.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is filled by init functions of the files in this package.
var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("levee: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// defaultCommand runs when levee is called with no arguments.
const defaultCommand = "lab"

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		if c, ok := commands[defaultCommand]; ok {
			return c.run(nil, stdout, stderr)
		}
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 2 {
			fmt.Fprintf(stderr, "levee %s: want at most one command, got %q\n\n", args[0], args[1:])
			usage(stderr)
			return 2
		}
		if len(args) == 2 && !isHelpWord(args[1]) {
			c, ok := commands[args[1]]
			if !ok {
				fmt.Fprintf(stderr, "levee %s: unknown command %q\n\n", args[0], args[1])
				usage(stderr)
				return 2
			}
			return c.run([]string{"--help"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "levee: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Levee — a backpressure lab: a real AI gateway, fake slow models, open-loop load, chaos and a live dashboard.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: levee <command> [flags]   (no command: levee lab)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'levee <command> --help' for the flags of one command.")
}

// isHelpWord reports whether a is one of the words that ask for help
// ("levee help -h" and "levee help help" show the command list).
func isHelpWord(a string) bool { return a == "-h" || a == "--help" || a == "help" }
