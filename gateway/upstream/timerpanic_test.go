package upstream

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/syncbuf"
	"github.com/levee-lab/levee/internal/wire"
)

// A panic in an attempt-timeout or hedge timer callback (injected through
// the pool's timer hook, in the timer's own goroutine as time.AfterFunc
// runs it) is contained: logged once with its stack and the timer's
// name, counted in levee_upstream_timer_panics_total, and the call goes
// on as if the timer had found nothing to do — the attempt runs on and
// answers, nothing is retried or hedged, and no node is blamed. Before
// the fix the panic ended the process (here: the test binary).
func TestTimerPanicIsContained(t *testing.T) {
	const seed = 5 * time.Millisecond
	for _, tc := range []struct {
		timer string
		cfg   Config
		prio  int
		delay time.Duration // the timer's duration: 2 × the seeded p99 for the timeout, the p99 bin for the hedge
	}{
		{timerAttemptTimeout, Config{AttemptTimeout: AttemptTimeoutConfig{Min: time.Millisecond}, Hedge: HedgeConfig{Disabled: true}},
			LowestPriority, time.Duration(2 * float64(binValue(binOf(seed))))},
		{timerHedge, Config{AttemptTimeout: AttemptTimeoutConfig{Disabled: true}, Hedge: HedgeConfig{MinPerSecond: 10}},
			HighestPriority, binValue(binOf(seed))},
	} {
		t.Run(tc.timer, func(t *testing.T) {
			checkGoroutines(t)
			held, other := newScriptNode(t, answerHold), newScriptNode(t, answerOK)
			var logs syncbuf.Buffer
			timers := new(manualTimers)
			cfg := tc.cfg
			cfg.Nodes = []string{held.srv.URL, other.srv.URL}
			cfg.RetryBudget = RetryBudgetConfig{MinPerSecond: 10}
			p := newPool(t, cfg, first, WithClock(newFakeClock()), WithAfterFunc(timers.after),
				WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			p.timerHook = func(timer string) {
				if timer == tc.timer {
					panic("test: " + timer + " timer panics")
				}
			}
			seedLatency(p, 0, "work", seed, 50)
			seedLatency(p, 1, "work", seed, 50)

			done := sendInBackground(p, Call{Method: http.MethodPost, Path: "/work", Priority: tc.prio, Class: "work"})
			held.waitArrived(t)
			if k := timers.fire(tc.delay); k != 1 {
				t.Fatalf("%d timers of %v fired, want 1 (armed: %v)", k, tc.delay, timers.armed())
			}
			eventually(t, "the timer's panic counted", func() bool { return p.timerPanics.Load() == 1 })
			held.releaseAll() // the attempt, not given up, answers
			r := <-done
			if r.err != nil || r.body != "ok" {
				t.Fatalf("call: body %q err %v; want the held node's ok", r.body, r.err)
			}
			if c := p.Counters(); c.Attempts != 1 || c.RetriesSent != 0 || c.HedgesSent != 0 {
				t.Errorf("counters %+v: want the one attempt, no retry, no hedge", c)
			}
			if other.hits.Load() != 0 {
				t.Errorf("the other node got %d requests, want none", other.hits.Load())
			}
			for _, s := range p.Stats() {
				if s.Inflight != 0 || s.Failures != 0 || s.Timeouts != 0 {
					t.Errorf("stats %+v: nothing outstanding, no node blamed", s)
				}
			}
			if v, ok := gatherValue(t, p, wire.MetricUpstreamTimerPanics, nil); !ok || v != 1 {
				t.Errorf("%s = %v (found %v), want 1", wire.MetricUpstreamTimerPanics, v, ok)
			}
			log := logs.String()
			if n := strings.Count(log, "upstream: timer panicked"); n != 1 {
				t.Errorf("panic logged %d times, want once; log:\n%s", n, log)
			}
			if !strings.Contains(log, "timer="+tc.timer) || !strings.Contains(log, "timerpanic_test.go") {
				t.Errorf("the log names no timer %s or carries no stack; log:\n%s", tc.timer, log)
			}
		})
	}
}
