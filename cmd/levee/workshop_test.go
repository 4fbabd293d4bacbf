package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/lesson"
)

// commandCase is one run of a levee command: its arguments, the exit code
// and fragments of stdout and stderr it must print.
type commandCase struct {
	name     string
	args     []string
	wantCode int
	wantOut  []string
	wantErr  []string
}

// check runs `levee cmd args…` and returns its stdout.
func (tt commandCase) check(t *testing.T, cmd string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := dispatch(append([]string{cmd}, tt.args...), &stdout, &stderr)
	if code != tt.wantCode {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
	}
	for _, w := range tt.wantOut {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
		}
	}
	for _, w := range tt.wantErr {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	return stdout.String()
}

// TestPlanCommand: `levee plan` on the reference run of lesson 03 prints
// QPS_safe and the per-instance limit (issue 15's acceptance), flags may
// follow the folder, and bad input exits 2 with a reason.
func TestPlanCommand(t *testing.T) {
	ref := "../../experiments/reference/03-priority-shedding"
	tests := []commandCase{
		{name: "reference run 03", args: []string{ref}, wantOut: []string{"QPS_safe = C / T = 48 / 0.224 s = 214.7 req/s", "limit = QPS × P99 / N = 214.7 req/s × 0.6 s / 1 = 128.8 → 129"}},
		{name: "what if, flags after the folder", args: []string{ref, "--gateways", "3"}, wantOut: []string{"/ 3 = 42.9 → 43", "gateways N           3"}},
		{name: "seed 000 by hand", args: []string{"--slots", "50", "--mean", "1.2s"}, wantOut: []string{"QPS_safe = C / T = 50 / 1.2 s = 41.7 req/s", "needs the p99 service time"}},
		{name: "seed 002 by hand", args: []string{"--target=2000", "--p99=1.5s", "--gateways=10"}, wantOut: []string{"= 2,000 req/s × 1.5 s / 10 = 300.0 → 300"}},
		{name: "help", args: []string{"--help"}, wantErr: []string{"Usage: levee plan", "-slots"}},
		{name: "nothing given", args: nil, wantCode: 2, wantErr: []string{"nothing to plan"}},
		{name: "contradictory", args: []string{"--slots", "4", "--p50", "2s", "--p99", "1s"}, wantCode: 2, wantErr: []string{"p99 1s is below p50 2s"}},
		{name: "out of range", args: []string{ref, "--gateways", "0"}, wantCode: 2, wantErr: []string{"gateways 0: want ≥ 1"}},
		{name: "bad flag value", args: []string{"--mean", "soon"}, wantCode: 2, wantErr: []string{"invalid value"}},
		{name: "two folders", args: []string{ref, ref}, wantCode: 2, wantErr: []string{"at most one run folder"}},
		{name: "missing folder", args: []string{"no/such/run"}, wantCode: 2, wantErr: []string{"no such file"}},
		{name: "not a run folder", args: []string{"../../experiments"}, wantCode: 2, wantErr: []string{"not a run folder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout := tt.check(t, "plan")
			if tt.wantCode != 0 && stdout != "" {
				t.Errorf("a failed plan printed to stdout: %q", stdout)
			}
		})
	}
}

func TestLessonsCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "01-mine.yaml"), []byte("name: 01-mine\ntitle: \"01 · Mine\"\narticles: [\"002\"]\ndescription: Mine. Really.\nduration: 5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	twice := t.TempDir() // two lessons numbered 01
	for _, name := range []string{"01-one", "01-other"} {
		if err := os.WriteFile(filepath.Join(twice, name+".yaml"), []byte("name: "+name+"\ntitle: \"01 · "+name+"\"\narticles: [\"002\"]\ndescription: Mine.\nduration: 5s\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "01-bad.yaml"), []byte("name: x\nduration: 1s\nwings: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []commandCase{
		{name: "list", args: nil, wantOut: []string{"no.", "seed", "03-priority-shedding", "Priority load shedding", "001 002", "02-semaphore"}},
		{name: "one lesson", args: []string{"03"}, wantOut: []string{"03 · Priority load shedding", "seed articles 003", "predict", "levee lab 03-priority-shedding"}},
		{name: "its file", args: []string{"02-semaphore", "--yaml"}, wantOut: []string{"name: 02-semaphore", "articles: [\"000\"]"}},
		{name: "a folder", args: []string{"--dir", dir}, wantOut: []string{"1 lesson in " + dir, "01-mine", "Mine."}},
		{name: "a broken folder", args: []string{"--dir", broken}, wantCode: 2, wantErr: []string{"01-bad.yaml", "wings"}},
		{name: "unknown lesson", args: []string{"99"}, wantCode: 2, wantErr: []string{`no single lesson "99"`, "03-priority-shedding"}},
		{name: "an ambiguous number", args: []string{"--dir", twice, "01"}, wantCode: 2, wantErr: []string{`lesson "01": more than one lesson matches`, "01-one (01)", "01-other (01)"}},
		{name: "one of them by name", args: []string{"--dir", twice, "01-other", "--yaml"}, wantOut: []string{"name: 01-other"}},
		{name: "yaml without a name", args: []string{"--yaml"}, wantCode: 2, wantErr: []string{"--yaml needs a lesson NAME"}},
		{name: "two names", args: []string{"01", "02"}, wantCode: 2, wantErr: []string{"at most one"}},
		{name: "help", args: []string{"--help"}, wantErr: []string{"Usage: levee lessons"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, "lessons") })
	}
}

// TestDoctorCommand: the exit status follows the verdict line (this
// machine's load decides which), and bad usage exits 2.
func TestDoctorCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"doctor", "--runs", filepath.Join(t.TempDir(), "runs")}, &stdout, &stderr)
	out := stdout.String()
	switch {
	case code == 0 && strings.Contains(out, "\nready: "):
	case code == 1 && strings.Contains(out, "\nnot ready: ") && strings.Contains(out, "fix: "):
	default:
		t.Errorf("exit %d with:\n%s\nstderr: %s", code, out, stderr.String())
	}
	for _, name := range []string{"terminal", "loopback", "load", "open files", "runs folder", "redis"} {
		if !strings.Contains(out, " "+name+" ") {
			t.Errorf("no %s line:\n%s", name, out)
		}
	}
	for _, tt := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"doctor", "extra"}, 2, "takes no arguments"},
		{[]string{"doctor", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"doctor", "--help"}, 0, "Usage: levee doctor"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := dispatch(tt.args, &stdout, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.err)
		}
	}
}

// `levee lab` and `levee run` take a lesson name or number besides a
// file; a file of that name wins; anything else is a clear error.
func TestResolveExperiment(t *testing.T) {
	for _, tt := range []struct{ arg, want string }{
		{"03-priority-shedding", "03-priority-shedding"},
		{"03", "03-priority-shedding"},
		{"3", "03-priority-shedding"},
		{"03-priority-shedding.yaml", "03-priority-shedding"}, // not here as a file: the lesson
		{"../../experiments/01-no-defenses.yaml", "01-no-defenses"},
	} {
		e, err := resolveExperiment(tt.arg)
		if err != nil || e.Name != tt.want {
			t.Errorf("%s: %v, %v; want %s", tt.arg, e, err, tt.want)
		}
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "03")
	os.WriteFile(own, []byte("name: mine\nduration: 1s\n"), 0o644)
	if e, err := resolveExperiment(own); err != nil || e.Name != "mine" {
		t.Errorf("a file named like a lesson: %v %v", e, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nduration: 1s\nbogus: 1\n"), 0o644)
	if _, err := resolveExperiment(bad); err == nil || !strings.Contains(err.Error(), "line 3: field bogus") {
		t.Errorf("a bad file: %v", err)
	}
	if _, err := resolveExperiment("04-node"); !errors.Is(err, lesson.ErrAmbiguous) || !strings.Contains(err.Error(), "04-node-loss (04)") || !strings.Contains(err.Error(), "04-node-loss-static (04b)") {
		t.Errorf("a prefix of two lessons: %v", err)
	}
	if _, err := resolveExperiment("nope"); err == nil || !strings.Contains(err.Error(), "no single lesson") || !strings.Contains(err.Error(), "03-priority-shedding") {
		t.Errorf("no such lesson: %v", err)
	}
	commandCase{name: "run unknown", args: []string{"nope"}, wantCode: 2, wantErr: []string{"levee run: nope: no such file"}}.check(t, "run")
	// A folder is named as one, not as a missing file.
	if _, err := resolveExperiment(dir); err == nil || !strings.Contains(err.Error(), dir+" is a folder, not an experiment file") || strings.Contains(err.Error(), "no such file") {
		t.Errorf("a folder: %v", err)
	}
	commandCase{name: "run a folder", args: []string{dir}, wantCode: 2, wantErr: []string{"levee run: " + dir + " is a folder"}}.check(t, "run")
}
