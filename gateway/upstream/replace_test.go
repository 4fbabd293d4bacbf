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
			done := sendOK(t, p, Call{Method: http.MethodPost, Path: "/work", Class: "work"})
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

// holdErrors is a transport whose failed round trips report only once
// the test closes release: an attempt cancelled by its timeout cannot
// reach its call before the test has fired every timer it means to.
type holdErrors struct {
	rt      http.RoundTripper
	release chan struct{}
}

func (h holdErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(r)
	if err != nil {
		<-h.release
	}
	return resp, err
}

// runTimers runs the armed timers of duration d one after another on the
// caller's goroutine and returns how many there were.
func runTimers(m *manualTimers, d time.Duration) int {
	due := m.take(d)
	for _, f := range due {
		f()
	}
	return len(due)
}

// A timeout abandons its attempt on the strength of another attempt in
// flight only when that one is not abandoned too: when a call's first
// attempt and its hedge time out together (their timers due in the same
// moment, as a stalled scheduler delivers them), one of them runs on and
// answers; before, each saw the other in flight and both were cancelled,
// leaving the call an attempt-timeout error with nothing sent in their
// place.
func TestAttemptTimeoutsTogetherKeepOne(t *testing.T) {
	checkGoroutines(t)
	const seed = 5 * time.Millisecond
	a, b := newScriptNode(t, answerHold), newScriptNode(t, answerHold)
	timers := new(manualTimers)
	release := make(chan struct{})
	tr := NewTransport(Config{Nodes: []string{a.srv.URL, b.srv.URL}, DialTimeout: 10 * time.Second})
	t.Cleanup(tr.CloseIdleConnections)
	p := newPool(t, Config{
		Nodes:          []string{a.srv.URL, b.srv.URL},
		RetryBudget:    RetryBudgetConfig{MinPerSecond: 10},
		AttemptTimeout: AttemptTimeoutConfig{Min: time.Millisecond},
		Hedge:          HedgeConfig{MinPerSecond: 10},
		Outlier:        OutlierConfig{Disabled: true},
	}, first, WithClock(newFakeClock()), WithAfterFunc(timers.after), WithTransport(holdErrors{tr, release}))
	seedLatency(p, 0, "work", seed, 50)
	seedLatency(p, 1, "work", seed, 50)
	done := sendOK(t, p, Call{Method: http.MethodPost, Path: "/work", Priority: HighestPriority, Class: "work"})
	a.waitArrived(t)
	if k := timers.fire(binValue(binOf(seed))); k != 1 { // the seeded p95: the hedge
		t.Fatalf("%d hedge timers armed, want 1 (armed: %v)", k, timers.armed())
	}
	b.waitArrived(t)
	timeout := time.Duration(2 * float64(binValue(binOf(seed))))
	if k := runTimers(timers, timeout); k != 2 {
		t.Fatalf("%d attempt timers of %v armed, want 2 (armed: %v)", k, timeout, timers.armed())
	}
	close(release)
	a.releaseAll()
	b.releaseAll()
	if err := <-done; err != nil {
		t.Fatalf("err %v, want the answer of the attempt left running", err)
	}
	if c := p.Counters(); c.Attempts != 2 || c.HedgesSent != 1 {
		t.Fatalf("counters %+v: want the first attempt and one hedge", c)
	}
	st := p.Stats()
	if st[0].Timeouts+st[1].Timeouts != 1 || st[0].Inflight != 0 || st[1].Inflight != 0 {
		t.Fatalf("stats %+v: want exactly one attempt timed out, nothing outstanding", st)
	}
}

// sendOK sends c on p from its own goroutine and returns the channel its
// error arrives on; an answer whose body is not "ok" is a test error.
func sendOK(t *testing.T, p *Pool, c Call) <-chan error {
	done := make(chan error, 1)
	go func() {
		resp, err := p.Send(context.Background(), c)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "ok" {
				t.Errorf("body %q, want ok", body)
			}
		}
		done <- err
	}()
	return done
}
