package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelp: `levee help CMD` shows that command's flags; an unknown CMD or
// more than one is a usage error (exit 2, the command list on stderr), not
// the general help with exit 0.
func TestHelp(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		code       int
		out, err   string
		quietOther bool // nothing on the other stream
	}{
		{[]string{"help"}, 0, "Commands:", "", true},
		{[]string{"--help"}, 0, "Commands:", "", true},
		{[]string{"help", "run"}, 0, "", "Usage: levee run", false},
		{[]string{"-h", "plan"}, 0, "", "Usage: levee plan", false},
		// Help about help is the command list ("unknown command \"-h\"", exit 2, before).
		{[]string{"help", "-h"}, 0, "Commands:", "", true},
		{[]string{"help", "help"}, 0, "Commands:", "", true},
		{[]string{"--help", "--help"}, 0, "Commands:", "", true},
		{[]string{"help", "bogus"}, 2, "", `levee help: unknown command "bogus"`, true},
		{[]string{"--help", "bogus"}, 2, "", `levee --help: unknown command "bogus"`, true},
		{[]string{"help", "run", "plan"}, 2, "", `levee help: want at most one command, got ["run" "plan"]`, true},
	} {
		var stdout, stderr bytes.Buffer
		code := dispatch(tt.args, &stdout, &stderr)
		if code != tt.code {
			t.Errorf("%q: exit %d, want %d", tt.args, code, tt.code)
		}
		if tt.out != "" && !strings.Contains(stdout.String(), tt.out) {
			t.Errorf("%q: stdout lacks %q:\n%s", tt.args, tt.out, stdout.String())
		}
		if tt.err != "" && !strings.Contains(stderr.String(), tt.err) {
			t.Errorf("%q: stderr lacks %q:\n%s", tt.args, tt.err, stderr.String())
		}
		if tt.err != "" && tt.quietOther && stdout.Len() > 0 {
			t.Errorf("%q: an error also printed on stdout: %q", tt.args, stdout.String())
		}
		if tt.out != "" && tt.quietOther && stderr.Len() > 0 {
			t.Errorf("%q: stderr %q", tt.args, stderr.String())
		}
	}
}

// TestHelpExitStatus: the commands whose exit codes scripts rely on say
// them in their --help, as the README's command table does.
func TestHelpExitStatus(t *testing.T) {
	for cmd, want := range map[string][]string{
		"run":      {"Exit status: 0 every threshold held; 1 a threshold or a fault step failed", "2 bad usage"},
		"lab":      {"Exit status: 0 quit", "2 bad usage", "130 a second"},
		"loadtest": {"Exit status: 0 some requests succeeded", "2 bad usage"},
		"doctor":   {"Exit status: 0 ready", "2 bad usage"},
	} {
		var stdout, stderr bytes.Buffer
		if code := dispatch([]string{"help", cmd}, &stdout, &stderr); code != 0 {
			t.Fatalf("help %s: exit %d", cmd, code)
		}
		for _, w := range want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("levee %s --help lacks %q:\n%s", cmd, w, stderr.String())
			}
		}
	}
}
