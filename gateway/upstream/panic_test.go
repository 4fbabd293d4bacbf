package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// heldPanicTransport answers calls to host as the node does, but their
// body's first read waits for release and then panics: a body reader's
// bug, met in the attempt's own goroutine once the test allows.
type heldPanicTransport struct {
	rt      http.RoundTripper
	host    string
	release chan struct{}
}

func (p *heldPanicTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.rt.RoundTrip(req)
	if err == nil && req.URL.Host == p.host {
		resp.Body = heldPanicBody{resp.Body, p.release}
	}
	return resp, err
}

type heldPanicBody struct {
	io.ReadCloser
	release chan struct{}
}

func (b heldPanicBody) Read([]byte) (int, error) {
	<-b.release
	panic("test: body reader panics")
}

// A panic in an attempt's goroutine fails that attempt only: the call goes
// on with its hedge, which answers it. The panic is counted once, not
// retried, and not blamed on the node; nothing stays outstanding and no
// goroutine is left. Before the fix the panic ended the process.
func TestAttemptPanicCallGoesOn(t *testing.T) {
	checkGoroutines(t)
	slow, fast := newScriptNode(t, answerOK), newScriptNode(t, answerHold)
	pt := &heldPanicTransport{rt: http.DefaultTransport.(*http.Transport).Clone(),
		host: strings.TrimPrefix(slow.srv.URL, "http://"), release: make(chan struct{})}
	timers := new(manualTimers)
	p := newPool(t, Config{
		Nodes:          []string{slow.srv.URL, fast.srv.URL},
		AttemptTimeout: AttemptTimeoutConfig{Disabled: true},
		Hedge:          HedgeConfig{MinPerSecond: 10},
	}, first, WithTransport(pt), WithClock(newFakeClock()), WithAfterFunc(timers.after))
	seedLatency(p, 0, "work", 5*time.Millisecond, 50)
	seedLatency(p, 1, "work", 5*time.Millisecond, 50)

	done := sendInBackground(p, Call{Method: http.MethodPost, Path: "/work", Priority: HighestPriority, Class: "work"})
	slow.waitArrived(t)
	if k := timers.fire(binValue(binOf(5 * time.Millisecond))); k != 1 {
		t.Fatalf("%d hedge timers fired, want 1", k)
	}
	fast.waitArrived(t) // the hedge is in flight
	close(pt.release)   // the first attempt panics
	eventually(t, "the panic counted", func() bool { return p.panics.Load() == 1 })
	fast.releaseAll() // the hedge answers
	r := <-done
	if r.err != nil || r.body != "ok" {
		t.Fatalf("call: body %q err %v; want the hedge's ok", r.body, r.err)
	}
	if c := p.Counters(); c.Attempts != 2 || c.RetriesSent != 0 || c.HedgesSent != 1 {
		t.Errorf("counters %+v: want the first attempt and its hedge, no retry", c)
	}
	if got := p.panics.Load(); got != 1 {
		t.Errorf("panics %d, want 1", got)
	}
	for _, s := range p.Stats() {
		if s.Inflight != 0 || s.Failures != 0 {
			t.Errorf("stats %+v: a panicked attempt is neither outstanding nor the node's failure", s)
		}
	}

	// Alone, a panicked attempt fails its call with ErrAttemptPanic.
	pt.release = make(chan struct{})
	close(pt.release)
	_, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: LowestPriority, Class: "work"})
	if !errors.Is(err, ErrAttemptPanic) {
		t.Errorf("call whose only attempt panicked: %v, want ErrAttemptPanic", err)
	}
}
