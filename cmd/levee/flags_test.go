package main

import (
	"io"
	"reflect"
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
