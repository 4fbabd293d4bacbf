package runfiles

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestReportGolden prints recorded runs side by side: two finished runs
// (lessons 01 and 03 recorded with --quick) and one killed run that has
// only samples (its last line torn).
func TestReportGolden(t *testing.T) {
	var runs []*Run
	for _, d := range []string{"01", "03", "killed"} {
		r, err := ReadRun(filepath.Join("testdata", "report", d))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	if !runs[2].Partial || runs[0].Partial {
		t.Fatalf("partial flags: %v %v", runs[0].Partial, runs[2].Partial)
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, runs); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("report differs from %s (run with -update if intended):\n%s", golden, buf.String())
	}
}

func TestReportErrors(t *testing.T) {
	if err := WriteReport(&bytes.Buffer{}, nil); err == nil {
		t.Error("empty report accepted")
	}
	if _, err := ReadRun(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no summary.json") {
		t.Errorf("empty folder: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, SummaryFile), []byte("{not json"), 0o644)
	if _, err := ReadRun(dir); err == nil {
		t.Error("bad summary.json accepted")
	}
}

func TestGroupDigits(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "999": "999", "1000": "1,000", "1234567": "1,234,567", "-12345": "-12,345"} {
		if got := groupDigits(in); got != want {
			t.Errorf("groupDigits(%s) = %s, want %s", in, got, want)
		}
	}
}
