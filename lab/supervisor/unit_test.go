package supervisor

import (
	"os"
	"strings"
	"testing"
)

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
