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

// Counters gives the gateways' RSS summed; TakeRSSPeak the largest one
// gateway read since the last take (a pod memory limit is per gateway),
// the reading an OOM kill zeroed included, and then starts again from
// the last readings.
func TestRSSSumAndPeakPerGateway(t *testing.T) {
	s := &Supervisor{gwRSS: []uint64{100 << 20, 300 << 20, 0}, gwPeak: []uint64{150 << 20, 300 << 20, 500 << 20}}
	if c := s.Counters(); c.RSSBytes != 400<<20 {
		t.Errorf("RSS sum %v MB, want 400", c.RSSBytes/(1<<20))
	}
	if p := s.TakeRSSPeak(); p != 500<<20 {
		t.Errorf("first peak %v MB, want 500 (the killed gateway's last reading)", p/(1<<20))
	}
	if p := s.TakeRSSPeak(); p != 300<<20 {
		t.Errorf("second peak %v MB, want 300 (the largest last reading)", p/(1<<20))
	}
}
