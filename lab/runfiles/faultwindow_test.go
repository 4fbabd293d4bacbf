package runfiles

import (
	"math"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/experiment"
)

// faultOp is one fault_apply (revert false) or fault_revert of
// model_latency, at seconds of a run recorded from the start.
type faultOp struct {
	revert bool
	at     float64
}

// TestFaultWindowsReappliedOrRevertedAlone: a fault applied again while
// it is active (the dashboard's apply racing the record key's list of the
// faults already active, or events written so) is one window, from its
// first apply to its revert, not a second window left open to the end of
// the run (which hid the recovery: nil, "a fault still active"); a revert
// with no apply before it is of a fault active when the recording began,
// a window from the recording's start; a second revert of a window
// already closed changes nothing. The finished run's Aggregator and a
// killed run's rebuild from events.jsonl read the same windows and the
// same recovery.
func TestFaultWindowsReappliedOrRevertedAlone(t *testing.T) {
	exp, err := experiment.ParseExperiment([]byte("name: windows\nduration: 30s\nclient_timeout: 1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		ops        []faultOp // in the order the lab reports them
		start, end float64   // the one window wanted
	}{
		{"re-applied while active", []faultOp{{false, 5}, {false, 7}, {true, 10}}, 5, 10},
		{"re-applied, the earlier apply reported last", []faultOp{{false, 7}, {false, 5}, {true, 10}}, 5, 10},
		{"reverted with no apply", []faultOp{{true, 10}}, 0, 10},
		{"reverted twice", []faultOp{{false, 5}, {true, 10}, {true, 12}}, 5, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			samples, _, _ := recoveryRun(false)
			start := samples[0].Time.Add(-250 * time.Millisecond)
			at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
			a := NewAggregator(start, 150)
			var events []Event
			for _, op := range tt.ops {
				kind := EventFaultApply
				if op.revert {
					kind = EventFaultRevert
					a.FaultReverted("model_latency", at(op.at))
				} else {
					a.FaultApplied("model_latency", at(op.at))
				}
				events = append(events, Event{Time: at(op.at), Elapsed: op.at, Kind: kind, Fields: map[string]any{"fault": "model_latency"}})
			}
			for _, x := range samples {
				a.Add(x, x.WindowS, 0, false, 0)
			}
			last := samples[len(samples)-1]
			ok := last.OutcomeTotal["ok"]
			sum := a.Summarize(SummaryInput{Exp: exp, Totals: totals(30*time.Second, last.OfferedTotal, map[string]uint64{"ok": ok}, 100), End: last.Time})
			if len(sum.Faults) != 1 || sum.Faults[0].AtS != tt.start || sum.Faults[0].EndS != tt.end {
				t.Errorf("summary's fault windows %+v, want one from %v s to %v s", sum.Faults, tt.start, tt.end)
			}
			if sum.Recovery == nil || sum.Recovery.FaultsEndS != tt.end || !sum.Recovery.Recovered {
				t.Fatalf("summary's recovery %+v, want one after the fault's end at %v s", sum.Recovery, tt.end)
			}
			r := killedRun(t, samples, events)
			got, want := r.Summary.Recovery, sum.Recovery
			if got == nil || got.Recovered != want.Recovered || got.FaultsEndS != want.FaultsEndS || got.RecoveryS != want.RecoveryS ||
				math.Abs(got.BaselineRatio-want.BaselineRatio) > 2e-6 || math.Abs(got.GoodputRatio-want.GoodputRatio) > 2e-6 {
				t.Errorf("recovery %+v rebuilt from events.jsonl, %+v in the summary", got, want)
			}
		})
	}
	// The window a lone revert opens starts before those recorded earlier:
	// the summary lists the windows in time order all the same.
	start := time.Unix(1_000_000, 0)
	a := NewAggregator(start, 150)
	a.FaultApplied("node_kill", start.Add(5*time.Second))
	a.FaultReverted("node_kill", start.Add(8*time.Second))
	a.FaultReverted("model_latency", start.Add(10*time.Second))
	sum := a.Summarize(SummaryInput{Exp: exp, Totals: totals(30*time.Second, 0, nil), End: start.Add(30 * time.Second)})
	if len(sum.Faults) != 2 || sum.Faults[0].Fault != "model_latency" || sum.Faults[0].AtS != 0 || sum.Faults[1].Fault != "node_kill" || sum.Faults[1].AtS != 5 {
		t.Errorf("summary's fault windows %+v, want model_latency from 0 s, then node_kill from 5 s", sum.Faults)
	}
}
