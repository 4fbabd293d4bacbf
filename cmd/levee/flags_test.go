package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseFlagsInterleaved(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		wantDone  bool
		wantQuick bool
		wantOut   string
		wantArgs  []string
	}{
		{"flags first", []string{"--quick", "--out", "d", "a.yaml"}, 0, false, true, "d", []string{"a.yaml"}},
		{"flags after", []string{"a.yaml", "--quick", "--out", "d"}, 0, false, true, "d", []string{"a.yaml"}},
		{"mixed", []string{"a", "--out=d", "b", "--quick", "c"}, 0, false, true, "d", []string{"a", "b", "c"}},
		{"no args", nil, 0, false, false, "", []string{}},
		{"bad flag after positional", []string{"a.yaml", "--nope"}, 2, true, false, "", nil},
		{"missing value", []string{"a.yaml", "--out"}, 2, true, false, "", nil},
		{"help", []string{"a.yaml", "--help"}, 0, true, false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlagSet("run", "run FILE", io.Discard)
			quick := fs.Bool("quick", false, "")
			out := fs.String("out", "", "")
			code, done := parseFlags(fs, tt.args)
			if code != tt.wantCode || done != tt.wantDone {
				t.Fatalf("parseFlags = (%d, %v), want (%d, %v)", code, done, tt.wantCode, tt.wantDone)
			}
			if done {
				return
			}
			if *quick != tt.wantQuick || *out != tt.wantOut {
				t.Errorf("quick=%v out=%q, want %v %q", *quick, *out, tt.wantQuick, tt.wantOut)
			}
			if got := fs.Args(); !reflect.DeepEqual(got, tt.wantArgs) {
				t.Errorf("Args() = %q, want %q", got, tt.wantArgs)
			}
		})
	}
}

func TestAdminTokenMinimumLength(t *testing.T) {
	t.Setenv("LEVEE_ADMIN_TOKEN", "")
	var stderr strings.Builder
	if _, err := adminToken(&stderr, "short"); err == nil || !strings.Contains(err.Error(), "--admin-token") {
		t.Fatalf("a 5-character flag token: %v", err)
	}
	if _, err := adminToken(&stderr, "", "short-config"); err == nil || !strings.Contains(err.Error(), "admin_token") {
		t.Fatalf("a short config token: %v", err)
	}
	t.Setenv("LEVEE_ADMIN_TOKEN", "tiny")
	if _, err := adminToken(&stderr, ""); err == nil || !strings.Contains(err.Error(), "LEVEE_ADMIN_TOKEN") {
		t.Fatalf("a short env token: %v", err)
	}
	t.Setenv("LEVEE_ADMIN_TOKEN", "")
	if tok, err := adminToken(&stderr, ""); err != nil || len(tok) < 16 || !strings.Contains(stderr.String(), tok) {
		t.Fatalf("generated token %q, %v", tok, err)
	}
}

// TestRunFolderFlags: levee run refuses --force without --out, a --runs
// or --out path that is not a folder, and --force on a folder that holds
// no previous run (removing nothing), before any child starts; a lesson
// name that resolves passes the flag checks.
func TestRunFolderFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	site := filepath.Join(dir, "site") // the audit's folder: no run.json
	for rel, body := range map[string]string{"file": "x", "site/index.html": "mine", "site/logs/keep.txt": "keep",
		"site/gateway-prod.yaml": "cfg", "site/notes.txt": "n", "site/summary.json": "s"} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	siteBefore := dirNames(t, site)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"--force without --out", []string{"03", "--quick", "--force"}, 2, "--force needs --out"},
		{"--force with --runs only", []string{"03", "--runs", dir, "--force"}, 2, "--force needs --out"},
		{"--runs with --out", []string{"03", "--quick", "--runs", dir, "--out", site}, 2, "--runs and --out"},
		{"--runs is a file", []string{"03", "--quick", "--runs", file}, 1, "runs folder " + file + ": not a folder"},
		{"--out is a file", []string{"03", "--quick", "--out", file, "--force"}, 1, "not a folder"},
		{"--force on a folder without a run", []string{"03", "--quick", "--out", site, "--force"}, 1, "no run.json"},
		{"--out with --force, unknown lesson", []string{"99-nope", "--out", site, "--force"}, 2, "no single lesson"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runRun(tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("levee run %q: exit %d, stderr %q; want exit %d with %q", tt.args, code, stderr.String(), tt.code, tt.want)
			}
		})
	}
	if after := dirNames(t, site); !slices.Equal(after, siteBefore) {
		t.Errorf("the folder without a run changed: %q, was %q", after, siteBefore)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Errorf("the file was touched: %q, %v", b, err)
	}
}

// dirNames is every path under dir, relative and sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
