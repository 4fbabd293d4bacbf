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

// Counters gives the gateways' RSS both summed and the largest one's: a
// pod memory limit is per gateway, so only the latter reads against it.
func TestCountersRSSPerGateway(t *testing.T) {
	s := &Supervisor{gwRSS: []uint64{100 << 20, 300 << 20, 0}}
	c := s.Counters()
	if c.RSSBytes != 400<<20 || c.RSSMaxBytes != 300<<20 {
		t.Errorf("RSS sum %v MB, max %v MB; want 400 and 300", c.RSSBytes/(1<<20), c.RSSMaxBytes/(1<<20))
	}
}
