package upstream

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// A losing attempt that got its answer's first byte just before the call
// gave it up (a hedge and its first attempt answering together) is closed
// at once, not read: its node sees the client leave and Send returns. It
// used to be drained of up to 4 KiB first, so a losing stream held the
// winner's answer back until the loser had streamed 4 KiB or ended, and
// its node kept generating the whole time. The test launches one attempt
// of a call on a node that sends one byte and then holds its answer, waits
// until the attempt has its first byte, and then ends the call.
func TestLoserWithAnswerClosedNotDrained(t *testing.T) {
	checkGoroutines(t)
	a := newScriptNode(t, answerFirstByte)
	p := newPool(t, Config{Nodes: []string{a.srv.URL}}, WithClock(newFakeClock()))
	s := &callState{p: p, ctx: context.Background(), c: Call{Method: http.MethodPost, Path: "/work", Class: "work"},
		prio: HighestPriority, results: make(chan attemptResult, 1)}
	at, err := s.launch(kindFirst)
	if err != nil {
		t.Fatal(err)
	}
	a.waitArrived(t)
	eventually(t, "the attempt's first byte", func() bool { return at.state.Load() == attemptDone })
	finished := make(chan struct{})
	go func() {
		s.finish()
		close(finished)
	}()
	select {
	case <-finished:
	case <-a.goneEvent:
		<-finished
	case <-time.After(5 * time.Second):
		t.Fatal("the call still waits on its losing attempt's answer after 5 s: it is being read, not closed")
	}
	if st := p.Stats(); st[0].Inflight != 0 {
		t.Fatalf("stats %+v: the loser still holds its node", st)
	}
}
