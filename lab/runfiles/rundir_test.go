package runfiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// aRunJSON is a run.json as every run writes it first (name and start).
const aRunJSON = `{"name": "03-priority-shedding", "started": "2026-12-01T01:45:53Z"}`

// aRun is every file a run leaves, the Redis cluster's included, plus the
// temporary files of writes a killed run left.
var aRun = map[string]string{
	RunFile: aRunJSON, SamplesFile: "{}\n", EventsFile: "{}\n", SummaryFile: "{}", ReportFile: "old", HTMLReportFile: "old",
	".summary.json.123456": "torn", ".report.html.42": "torn",
	"gateway-0.yaml": "old", "gateway-12.yaml": "old",
	"logs/node-0.log": "old", "logs/node-2.log": "old", "logs/gateway-0.log": "old", "logs/redis.log": "old",
	"logs/redis-cluster/node-0/redis.log": "old", "logs/redis-cluster/node-0/nodes.conf": "old",
	"logs/redis-cluster/node-0/dump.rdb": "old", "logs/redis-cluster/node-3/nodes.conf.tmp-77-1700000000000": "torn",
	"logs/redis-cluster/node-3/temp-1700000000.77.rdb": "torn",
}

// notARun is files a run never writes, some with names close to a run's.
var notARun = map[string]string{
	"index.html": "mine", "gateway-prod.yaml": "mine", "gateway-.yaml": "mine", "notes.txt": "mine",
	".summary.json.bak": "mine", "logs/keep.txt": "mine", "logs/node-a.log": "mine",
	"logs/redis-cluster/node-0/mine.txt": "mine", "logs/redis-cluster/notes/redis.log": "mine",
	"summary.json.bak": "mine",
}

func union(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// writeTree writes files (slash paths relative to dir) into dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// listTree is every file and folder under dir, as sorted slash paths
// (folders end in "/").
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// treeOf is listTree of a folder holding exactly files.
func treeOf(t *testing.T, files map[string]string) []string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	return listTree(t, dir)
}

// TestResolveRunDirOut: --out takes a missing or empty folder as is;
// refuses one that holds files unless forced; forced, it refuses a folder
// without a previous run and removes nothing, else removes exactly the
// files a run writes (folders only once empty) and nothing else.
func TestResolveRunDirOut(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // in the --out folder before; nil: no folder
		force   bool
		wantErr error    // nil: success
		wantMsg string   // in the error
		after   []string // the folder's tree afterwards (nil: as before)
	}{
		{name: "missing folder", files: nil, after: []string{}},
		{name: "empty folder", files: map[string]string{}},
		{name: "a run, not forced", files: union(aRun, notARun), wantErr: ErrRunDirNotEmpty, wantMsg: "add --force"},
		{name: "not a run, not forced", files: notARun, wantErr: ErrRunDirNotEmpty, wantMsg: "no previous run for --force to replace"},
		{name: "a run, forced: only its files go", files: union(aRun, notARun), force: true, after: treeOf(t, notARun)},
		{name: "a run alone, forced: folders go once empty", files: aRun, force: true, after: []string{}},
		{name: "the audit's folder: no run.json, forced", force: true, wantErr: ErrNoPreviousRun, wantMsg: "no run.json",
			files: map[string]string{"index.html": "mine", "logs/keep.txt": "keep", "gateway-prod.yaml": "cfg", "notes.txt": "n", "summary.json": "s"}},
		{name: "run.json not JSON, forced", files: union(notARun, map[string]string{RunFile: "old"}), force: true, wantErr: ErrNoPreviousRun, wantMsg: "run.json is not a run's"},
		{name: "run.json without a name, forced", files: union(aRun, map[string]string{RunFile: `{"started": "2026-12-01T01:45:53Z"}`}), force: true, wantErr: ErrNoPreviousRun, wantMsg: "no name or started"},
		{name: "run.json without a start, forced", files: union(aRun, map[string]string{RunFile: `{"name": "x"}`}), force: true, wantErr: ErrNoPreviousRun, wantMsg: "no name or started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if tt.files != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				writeTree(t, dir, tt.files)
			}
			before := listTree(t, dir)
			got, err := ResolveRunDir(dir, "", "x", time.Now(), tt.force)
			if tt.wantErr == nil {
				if err != nil || got != dir {
					t.Fatalf("ResolveRunDir = %q, %v; want %q, nil", got, err, dir)
				}
			} else if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error %v; want %v containing %q", err, tt.wantErr, tt.wantMsg)
			} else if n := strings.Count(err.Error(), "run folder"); n != 1 {
				t.Errorf("error %q says \"run folder\" %d times", err, n) // it read "run folder r1: run folder is not empty"
			}
			want := tt.after
			if want == nil {
				want = before
			}
			if after := listTree(t, dir); !slices.Equal(after, want) {
				t.Errorf("afterwards the folder holds\n  %q\nwant\n  %q", after, want)
			}
		})
	}
}

// TestResolveRunDirBadPaths: an --out or --runs path that is not a folder,
// and force without an out folder, are errors at once.
func TestResolveRunDirBadPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeTree(t, dir, map[string]string{"file": "x"})
	tests := []struct {
		name, out, runs string
		force           bool
		want            string
	}{
		{name: "--out is a file", out: file, want: "not a folder"},
		{name: "--out is a file, forced", out: file, force: true, want: "not a folder"},
		{name: "--runs is a file", runs: file, want: "runs folder " + file + ": not a folder"},
		{name: "--runs under a file", runs: filepath.Join(file, "sub"), want: "not a directory"},
		{name: "force without --out", runs: dir, force: true, want: "none was given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveRunDir(tt.out, tt.runs, "x", time.Now(), tt.force)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "too many runs") {
				t.Fatalf("ResolveRunDir = %q, %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Errorf("the file was touched: %q, %v", b, err)
	}
}

// TestResolveRunDirRunsFolder: without --out the run folder is new under
// --runs, suffixed "-2", "-3", … when a run of the same name started in
// the same second.
func TestResolveRunDirRunsFolder(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs") // made with the run folder
	now := time.Date(2026, 12, 1, 1, 45, 53, 0, time.UTC)
	base := filepath.Join(runs, "20261201-014553-x")
	for _, want := range []string{base, base + "-2", base + "-3"} {
		got, err := ResolveRunDir("", runs, "x", now, false)
		if err != nil || got != want {
			t.Fatalf("ResolveRunDir = %q, %v; want %q", got, err, want)
		}
		if err := os.MkdirAll(got, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
