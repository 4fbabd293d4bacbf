package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// TestRunVerdict: a finished run exits 1 when a threshold failed or when
// a fault step of the experiment failed, naming each on stderr; 0 when
// neither.
func TestRunVerdict(t *testing.T) {
	pass := map[string]runfiles.ThresholdResult{"unaccounted": {Expr: "== 0", Pass: true}}
	fail := map[string]runfiles.ThresholdResult{"unaccounted": {Expr: "== 0", Value: 3}}
	stepErr := []string{"faults.0 (redis_outage): apply at 5s: chaos: redis_outage: lab: this lab has no Redis"}
	cases := []struct {
		name     string
		sum      runfiles.Summary
		wantCode int
		wantErr  []string
	}{
		{"all well", runfiles.Summary{Thresholds: pass}, 0, nil},
		{"threshold failed", runfiles.Summary{Thresholds: fail}, 1, []string{"levee run: threshold failed: unaccounted = 3, want == 0"}},
		{"fault step failed", runfiles.Summary{Thresholds: pass, FaultStepErrors: stepErr}, 1,
			[]string{"levee run: fault step failed: faults.0 (redis_outage): apply at 5s: "}},
		{"both", runfiles.Summary{Thresholds: fail, FaultStepErrors: stepErr}, 1,
			[]string{"threshold failed: unaccounted", "fault step failed: faults.0 (redis_outage)"}},
		{"stopped by a signal", runfiles.Summary{Thresholds: fail, Ended: "stopped", DurationS: 3.891}, 1,
			[]string{"levee run: stopped early, after 3.9 s: the thresholds are judged on that part of the run", "threshold failed: unaccounted"}},
		{"stopped, thresholds met", runfiles.Summary{Thresholds: pass, Ended: "stopped", DurationS: 12}, 0,
			[]string{"stopped early, after 12.0 s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := runVerdict(&stderr, &c.sum); code != c.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, c.wantCode, stderr.String())
			}
			for _, w := range c.wantErr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if len(c.wantErr) == 0 && stderr.Len() != 0 {
				t.Errorf("stderr should stay empty, got %q", stderr.String())
			}
		})
	}
}
