package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/levee-lab/levee/internal/wire"
)

// newFlagSet returns a FlagSet that reports errors instead of exiting, and
// prints its usage to stderr with a one-line description on top.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: levee %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs. Flags may come before or after positional
// arguments (`levee run lesson.yaml --quick`), as users of k6 and vegeta
// expect; fs.Args() then holds the positional arguments in order. It returns
// (exit code, done): done is true when the caller must return the code at
// once (help was asked for: 0; a bad flag: 2, after the FlagSet printed the
// error and usage).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0, true
			}
			return 2, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Leave the positional arguments in fs.Args(): "--" ends flag parsing
	// without touching the values already set.
	_ = fs.Parse(append([]string{"--"}, positional...))
	return 0, false
}

// adminToken returns the first non-empty candidate (the --admin-token flag,
// then whatever else the command accepts), else $LEVEE_ADMIN_TOKEN, else a
// random token it announces on stderr ("admin token: TOKEN"). A token
// shorter than wire.MinAdminTokenLen is an error naming where it came from.
func adminToken(stderr io.Writer, flagValue string, fallbacks ...string) (string, error) {
	sources := append([]string{"--admin-token", "$" + wire.EnvAdminToken}, make([]string, len(fallbacks))...)
	for i, t := range append([]string{flagValue, os.Getenv(wire.EnvAdminToken)}, fallbacks...) {
		if t == "" {
			continue
		}
		if len(t) < wire.MinAdminTokenLen {
			src := sources[i]
			if src == "" {
				src = "the config's admin_token"
			}
			return "", fmt.Errorf("%s: the admin token must be at least %d characters (got %d)", src, wire.MinAdminTokenLen, len(t))
		}
		return t, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a token: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	fmt.Fprintf(stderr, "%s%s\n", wire.AdminTokenLine, tok)
	return tok, nil
}
