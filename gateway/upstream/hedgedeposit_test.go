package upstream

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// Calls deposit into the hedge budget while the retry defense is off, as
// SetRetryEnabled promises: ten P0 calls made with it off buy the hedge
// of a slow P0 call made once it is back on (hedge ratio 0.1, no
// reserve). Before, only calls hedged at the time deposited, so turning
// the defense on started with an empty hedge budget and the hedge was
// denied.
func TestHedgeBudgetFilledWhileRetryOff(t *testing.T) {
	checkGoroutines(t)
	slow, fast := newScriptNode(t, answerOK), newScriptNode(t, answerOK)
	timers := new(manualTimers)
	p := newPool(t, Config{
		Nodes:          []string{slow.srv.URL, fast.srv.URL},
		AttemptTimeout: AttemptTimeoutConfig{Disabled: true},
		Hedge:          HedgeConfig{Ratio: 0.1},
	}, first, WithClock(newFakeClock()), WithAfterFunc(timers.after))
	p.SetRetryEnabled(false)
	for range 10 {
		resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: HighestPriority, Class: "work"})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	p.SetRetryEnabled(true)
	seedLatency(p, 0, "work", 5*time.Millisecond, 50)
	seedLatency(p, 1, "work", 5*time.Millisecond, 50)
	slow.mode.Store(answerHold)
	done := make(chan error, 1)
	go func() {
		resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: HighestPriority, Class: "work"})
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	slow.waitArrived(t)
	for range 10 { // the ten calls' arrivals, still queued
		<-slow.arrived
	}
	if k := timers.fire(binValue(binOf(5 * time.Millisecond))); k != 1 {
		t.Fatalf("%d hedge timers armed, want 1 (armed: %v)", k, timers.armed())
	}
	eventually(t, "the hedge sent or denied", func() bool { c := p.Counters(); return c.HedgesSent+c.HedgesDenied == 1 })
	slow.releaseAll()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := p.Counters(); c.HedgesSent != 1 || c.HedgesDenied != 0 {
		t.Fatalf("counters %+v: want the hedge sent from the deposits made while retries were off", c)
	}
}
