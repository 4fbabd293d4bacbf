package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestLabWithoutTerminal: with non-TTY stdin/stdout, `levee lab` says why,
// hints at `levee run`, starts nothing and exits 2.
func TestLabWithoutTerminal(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  []string
	}{
		{name: "no args", args: nil, wantCode: 2, wantErr: []string{"needs a terminal", "levee run EXPERIMENT.yaml"}},
		{name: "experiment", args: []string{"experiments/03.yaml"}, wantCode: 2, wantErr: []string{"needs a terminal", "levee run experiments/03.yaml"}},
		{name: "two files", args: []string{"a.yaml", "b.yaml"}, wantCode: 2, wantErr: []string{"at most one experiment"}},
		{name: "bad flag", args: []string{"--nope"}, wantCode: 2, wantErr: []string{"flag provided but not defined"}},
		{name: "help", args: []string{"--help"}, wantCode: 0, wantErr: []string{"Usage: levee lab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdin bytes.Buffer
			var stdout, stderr bytes.Buffer
			code := runLab(tt.args, &stdin, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout should stay empty, got %q", stdout.String())
			}
		})
	}
}

// TestLeveeNoArgsIsLab: `levee` with no command runs lab (here: no terminal).
func TestLeveeNoArgsIsLab(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch(nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "levee run") {
		t.Errorf("levee with no args: code %d, stderr %q; want 2 and the levee run hint", code, stderr.String())
	}
}
