package lab

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

// TestLessons plays every lesson in experiments/ with --quick and checks
// the acceptance of issue 4 on the recorded summaries. It needs about
// 25 s per lesson, so it runs only with LEVEE_LESSONS=1; CI runs the short
// end-to-end tests (TestRunEndToEnd, TestControls, TestOOMKill,
// TestKilledRunLeavesNoOrphans) instead.
//
//	LEVEE_LESSONS=1 go test -run TestLessons -v ./lab/
//
// The checks are written here, not only read from the lesson files, so
// that editing a lesson's thresholds cannot weaken the acceptance.
func TestLessons(t *testing.T) {
	if os.Getenv("LEVEE_LESSONS") == "" {
		t.Skip("set LEVEE_LESSONS=1 to play every lesson with --quick (about 3 minutes)")
	}
	files, err := filepath.Glob("../experiments/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("lessons: %v %v", files, err)
	}
	runs := map[string]*runfiles.Run{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			exp, err := experiment.LoadExperiment(f)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), name)
			l, err := Open(context.Background(), exp, Options{Executable: leveeBin, Record: true, Out: dir, Quick: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Wait(); err != nil {
				t.Fatal(err)
			}
			s := l.Summary()
			runs[name] = &runfiles.Run{Dir: dir, Summary: s}
			var buf bytes.Buffer
			runfiles.WriteReport(&buf, []*runfiles.Run{runs[name]})
			t.Logf("\n%s", buf.String())
			for _, fail := range s.FailedThresholds() {
				t.Errorf("threshold failed: %s", fail)
			}
			if s.Unaccounted != 0 {
				t.Errorf("unaccounted %d", s.Unaccounted)
			}
			if s.ShedCheck.Exact && s.ShedCheck.Mismatch != 0 {
				t.Errorf("gateway shed counters %d, client saw %d (%d in doubt)", s.ShedCheck.Gateway, s.ShedCheck.Client, s.ShedCheck.InDoubt)
			}
			p0 := s.ByPriority["P0"].SuccessRate
			switch name {
			case "01-no-defenses":
				if s.GoodputRatio > 0.5 || p0 > 0.5 {
					t.Errorf("no collapse: goodput ratio %v, P0 success %v", s.GoodputRatio, p0)
				}
			case "03-priority-shedding":
				if p0 < 0.999 || s.GoodputRatio < 0.9 || s.Gateway.OOMKills != 0 {
					t.Errorf("P0 success %v, goodput ratio %v, OOM kills %d", p0, s.GoodputRatio, s.Gateway.OOMKills)
				}
				if !s.ShedCheck.Exact {
					t.Errorf("shed check not exact: %+v", s.ShedCheck)
				}
			case "04-node-loss":
				v, note := s.Metric("limit_settle_s")
				if !(v <= 5) {
					t.Errorf("limit settle %v s (%s)", v, note)
				}
				if d, _ := s.Metric("p0_success_during_faults"); d < 0.99 || p0 < 0.99 {
					t.Errorf("P0 success %v, during the kill %v", p0, d)
				}
			}
		})
	}
	if a, b := runs["01-no-defenses"], runs["03-priority-shedding"]; a != nil && b != nil {
		var buf bytes.Buffer
		runfiles.WriteReport(&buf, []*runfiles.Run{a, b})
		t.Logf("01 beside 03:\n%s", buf.String())
	}
}
