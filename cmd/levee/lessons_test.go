package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLessonsCommandDir: --dir names a folder that is missing or a file as
// such, and a lesson from a folder shows its real path and commands that
// work without --dir.
func TestLessonsCommandDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.yaml")
	if err := os.WriteFile(file, []byte("name: t\ntitle: \"01 · T\"\ndescription: T.\nduration: 5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []commandCase{
		{name: "list", args: []string{"--dir", dir}, wantOut: []string{"1 lesson in " + dir + "; levee lessons --dir " + dir + " NAME shows one"}},
		{name: "one lesson", args: []string{"--dir", dir, "t"}, wantOut: []string{"file " + file, "levee lab " + file, "levee run --quick " + file, "the file itself:   " + file}},
		{name: "its file", args: []string{"--dir", dir, "t", "--yaml"}, wantOut: []string{"name: t"}},
		{name: "missing folder", args: []string{"--dir", filepath.Join(dir, "nope")}, wantCode: 2, wantErr: []string{"folder " + filepath.Join(dir, "nope") + " does not exist"}},
		{name: "a file", args: []string{"--dir", file}, wantCode: 2, wantErr: []string{file + " is a file, not a folder"}},
		{name: "empty folder", args: []string{"--dir", t.TempDir()}, wantCode: 2, wantErr: []string{"no *.yaml files in "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, "lessons") })
	}
}
