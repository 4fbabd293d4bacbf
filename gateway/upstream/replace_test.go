package upstream

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// An attempt timeout abandons its attempt only when something can take
// its place. A node that is down (its health check refused) or whose
// breaker is open cannot: with the only other node out, the attempt runs
// on and its slow answer is the call's, instead of an attempt-timeout
// error with no retry sent. The node loss lesson is this case: the
// survivors slow down exactly when their peers are gone.
func TestAttemptTimeoutNoReplacementNode(t *testing.T) {
	const seed = 5 * time.Millisecond
	for _, tt := range []struct {
		name string
		out  func(t *testing.T, p *Pool, b *scriptNode)
	}{
		{"other node down", func(t *testing.T, p *Pool, b *scriptNode) {
			b.srv.Close() // nothing listens: one check marks it down
			p.checkAll(context.Background())
			if st := p.Stats(); st[1].Up {
				t.Fatalf("stats %+v: the closed node is still up", st)
			}
		}},
		{"other node's breaker open", func(t *testing.T, p *Pool, b *scriptNode) {
			br := p.nodes[1].breaker
			for range 20 {
				gen, _ := br.Allow()
				br.Record(gen, true)
			}
			if s := br.State(); s != StateOpen {
				t.Fatalf("breaker %v, want open", s)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			a, b := newScriptNode(t, answerHold), newScriptNode(t, answerOK)
			timers := new(manualTimers)
			p := newPool(t, Config{
				Nodes:          []string{a.srv.URL, b.srv.URL},
				RetryBudget:    RetryBudgetConfig{MinPerSecond: 10},
				AttemptTimeout: AttemptTimeoutConfig{Min: time.Millisecond},
				Hedge:          HedgeConfig{Disabled: true},
				Outlier:        OutlierConfig{Disabled: true},
			}, first, WithClock(newFakeClock()), WithAfterFunc(timers.after))
			seedLatency(p, 0, "work", seed, 50)
			seedLatency(p, 1, "work", seed, 50)
			tt.out(t, p, b)
			done := make(chan error, 1)
			go func() {
				resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Class: "work"})
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if string(body) != "ok" {
						t.Errorf("body %q, want ok", body)
					}
				}
				done <- err
			}()
			a.waitArrived(t)
			timeout := time.Duration(2 * float64(binValue(binOf(seed))))
			if k := timers.fire(timeout); k != 1 {
				t.Fatalf("%d attempt timers of %v armed, want 1 (armed: %v)", k, timeout, timers.armed())
			}
			// Give an abandoned attempt time to show as a disconnect
			// before the held answer is let go.
			select {
			case err := <-done:
				t.Fatalf("call ended (%v) while its only usable node was still answering", err)
			case <-a.goneEvent:
				t.Fatal("attempt abandoned with no node to take its place")
			case <-time.After(200 * time.Millisecond):
			}
			a.releaseAll()
			if err := <-done; err != nil {
				t.Fatalf("err %v, want the slow node's answer", err)
			}
			if c, st := p.Counters(), p.Stats(); c.Attempts != 1 || st[0].Timeouts != 0 || st[0].Inflight != 0 {
				t.Fatalf("counters %+v stats %+v: want one attempt, no timeout, nothing outstanding", c, st)
			}
		})
	}
}
