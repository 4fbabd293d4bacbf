package lab

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/lab/runfiles"
)

// TestFaultWindowsOnTheLabsClock: the summary's fault windows and the
// fault_apply/fault_revert events in events.jsonl are stamped by one
// clock, the lab's, so a finished run's windows are its events' times,
// and its recovery is what a rebuild from events.jsonl (a killed run)
// reads, to the digit. The windows took the chaos controller's
// time.Now() while the events took the lab's clock: microseconds apart
// on the real clock (now and then a millisecond of rounding apart), and
// on a test's fake clock years apart.
func TestFaultWindowsOnTheLabsClock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	exp := mustParse(t, `
name: oneclock
duration: 3s
start_rate: 20
nodes: {count: 1}
faults:
  - {at: 1s, fault: model_latency, params: {multiplier: 2}, for: 1s}
`)
	// A fake clock far from the real one: a time taken from the real
	// clock anywhere on the way shows.
	fc := clockwork.NewFakeClockAt(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC))
	l, err := Open(context.Background(), exp, Options{Executable: leveeBin, Record: true, Out: dir, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	playOnFakeClock(t, l, fc)
	sum := l.Summary()
	if sum == nil {
		t.Fatal("no summary")
	}
	evs, err := runfiles.ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	var applied, reverted []float64
	for _, e := range evs {
		at := math.Round(e.Time.Sub(sum.Started).Seconds()*1000) / 1000
		switch e.Kind {
		case runfiles.EventFaultApply:
			applied = append(applied, at)
		case runfiles.EventFaultRevert:
			reverted = append(reverted, at)
		}
	}
	if len(applied) != 1 || len(reverted) != 1 {
		t.Fatalf("events: applies at %v s, reverts at %v s; want one of each", applied, reverted)
	}
	if len(sum.Faults) != 1 || sum.Faults[0].AtS != applied[0] || sum.Faults[0].EndS != reverted[0] {
		t.Errorf("summary's fault windows %+v; events.jsonl: applied at %v s, reverted at %v s", sum.Faults, applied[0], reverted[0])
	}
	want := sum.Recovery
	if want == nil {
		t.Fatal("the summary has no recovery")
	}
	// The same run killed before its summary was written.
	if err := os.Remove(filepath.Join(dir, runfiles.SummaryFile)); err != nil {
		t.Fatal(err)
	}
	r, err := runfiles.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Summary.Recovery
	if !r.Partial || got == nil || got.FaultsEndS != want.FaultsEndS || got.RecoveryS != want.RecoveryS || got.Recovered != want.Recovered ||
		math.Abs(got.BaselineRatio-want.BaselineRatio) > 2e-6 || math.Abs(got.GoodputRatio-want.GoodputRatio) > 2e-6 {
		t.Errorf("recovery %+v rebuilt from the files, %+v in the summary", got, want)
	}
}
