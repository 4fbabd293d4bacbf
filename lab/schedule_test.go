package lab

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/levee-lab/levee/lab/experiment"
)

// The schedule runs on the lab's clock: with a fake clock the ramp, a
// pause, a manual override, a spike and the narration steps are exact.
func TestScheduleOnAFakeClock(t *testing.T) {
	e, err := experiment.ParseExperiment([]byte(`
name: s
start_rate: 0
stages: [{duration: 10s, target: 100}, {duration: 10s, target: 100}]
narration:
  - {at: 0s, kind: predict, text: one}
  - {at: 8s, kind: watch, text: two}
`))
	if err != nil {
		t.Fatal(err)
	}
	fc := clockwork.NewFakeClock()
	l := &Lab{exp: e, clock: fc, sched: newSchedule(e, fc)}
	l.sched.begin(fc.Now())
	at := func(want time.Duration, rate float64, stage, narration int) {
		t.Helper()
		p := l.sched.next(fc.Now())
		if p.at != want || p.rate != rate || p.stage != stage || p.narration != narration {
			t.Fatalf("plan %+v, want at %v rate %v stage %d narration %d", p, want, rate, stage, narration)
		}
	}
	at(0, 0, 0, 1)
	fc.Advance(5 * time.Second)
	at(5*time.Second, 50, 0, 0) // halfway up the first ramp
	l.PauseRamp(true)
	fc.Advance(time.Hour) // paused: the schedule's clock stands still
	at(5*time.Second, 50, 0, 0)
	l.PauseRamp(false)
	fc.Advance(3 * time.Second)
	at(8*time.Second, 80, 0, 2)
	l.SetRate(20) // a manual override pauses the ramp
	fc.Advance(5 * time.Second)
	at(8*time.Second, 20, 0, 0)
	l.Spike(3, 2*time.Second)
	at(8*time.Second, 60, 0, 0)
	fc.Advance(2 * time.Second)
	at(8*time.Second, 20, 0, 0)
	l.PauseRamp(false) // resuming ends the override
	fc.Advance(2 * time.Second)
	at(10*time.Second, 100, 1, 0)
	l.SetRateFactor(2) // the traffic_spike fault
	at(10*time.Second, 200, 1, 0)
	if ls := l.Lesson(); ls.Step != 2 || ls.Text != "two" {
		t.Errorf("lesson %+v", ls)
	}
}
