package supervisor

import (
	"os"
	"strings"
	"testing"
)

func TestParseReady(t *testing.T) {
	tests := []struct {
		line   string
		listen string
	}{
		{`{"levee_ready":{"kind":"gateway","listen":"127.0.0.1:4","admin":"127.0.0.1:5","pid":1}}`, "127.0.0.1:4"},
		{`  {"levee_ready":{"kind":"fakemodel","listen":"127.0.0.1:9","nodes":["127.0.0.1:9"]}}` + "\n", "127.0.0.1:9"},
		{`{"levee_ready":{"kind":"gateway"}}`, ""},
		{`{"levee_ready":null}`, ""},
		{`levee_ready but not json`, ""},
		{`{"other":1}`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		r := parseReady([]byte(tt.line))
		got := ""
		if r != nil {
			got = r.Listen
		}
		if got != tt.listen {
			t.Errorf("%q: listen %q, want %q", tt.line, got, tt.listen)
		}
	}
}

func TestParseVmRSS(t *testing.T) {
	ok := "Name:\tx\nVmPeak:\t  100 kB\nVmRSS:\t    2048 kB\nThreads: 3\n"
	if v, err := parseVmRSS(strings.NewReader(ok)); err != nil || v != 2048*1024 {
		t.Errorf("got %d %v", v, err)
	}
	for _, bad := range []string{"Name: x\n", "VmRSS: 12 MB\n", "VmRSS: x kB\n"} {
		if _, err := parseVmRSS(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if v, err := readRSS(os.Getpid()); err != nil || v == 0 {
		t.Errorf("own RSS: %d %v", v, err)
	}
	if _, err := readRSS(1 << 30); err == nil {
		t.Error("RSS of a process that does not exist")
	}
}
