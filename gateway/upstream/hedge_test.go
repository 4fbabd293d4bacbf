package upstream

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// A call stuck on a slow node is hedged on another node when its priority
// allows and the hedge budget has a token; the first good answer wins and
// the loser is cancelled (its node sees the client leave). Latency is
// seeded, the test fires the hedge timer itself once the first request
// reached its node, and the slow node never answers unless released: every
// outcome is decided by the code, not by timing.
func TestHedge(t *testing.T) {
	tests := []struct {
		name      string
		priority  int
		hedge     HedgeConfig
		slowMode  int32 // the first node
		fastMode  int32 // the second node
		wantHedge bool  // a hedge is sent
		denied    bool  // … but the budget refuses it
		hedgeWins bool
	}{
		{name: "P0 hedged, hedge wins", priority: 0, slowMode: answerHang, fastMode: answerOK, wantHedge: true, hedgeWins: true},
		{name: "P0 hedged on time to first byte", priority: 0, slowMode: answerHeadersOnly, fastMode: answerOK, wantHedge: true, hedgeWins: true},
		{name: "P0 hedged, first attempt wins", priority: 0, slowMode: answerHold, fastMode: answerHang, wantHedge: true},
		{name: "P1 not hedged by default", priority: 1, slowMode: answerHold, fastMode: answerOK},
		{name: "P1 hedged with include_p1", priority: 1, hedge: HedgeConfig{IncludeP1: true}, slowMode: answerHang, fastMode: answerOK, wantHedge: true, hedgeWins: true},
		{name: "P2 never hedged", priority: 2, hedge: HedgeConfig{IncludeP1: true}, slowMode: answerHold, fastMode: answerOK},
		{name: "hedge budget empty", priority: 0, hedge: HedgeConfig{MinPerSecond: -1}, slowMode: answerHold, fastMode: answerOK, wantHedge: true, denied: true},
		{name: "hedging disabled", priority: 0, hedge: HedgeConfig{Disabled: true}, slowMode: answerHold, fastMode: answerOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			slow, fast := newScriptNode(t, tt.slowMode), newScriptNode(t, tt.fastMode)
			timers := new(manualTimers)
			hc := tt.hedge
			switch hc.MinPerSecond {
			case 0:
				hc.MinPerSecond = 10 // a token from the start
			case -1:
				hc.MinPerSecond = 0 // none: Ratio 0.1 needs ten calls for one
			}
			p := newPool(t, Config{
				Nodes:          []string{slow.srv.URL, fast.srv.URL},
				AttemptTimeout: AttemptTimeoutConfig{Disabled: true}, // hedging alone
				Hedge:          hc,
			}, first, WithClock(newFakeClock()), WithAfterFunc(timers.after))
			seedLatency(p, 0, "work", 5*time.Millisecond, 50)
			seedLatency(p, 1, "work", 5*time.Millisecond, 50)

			done := sendInBackground(p, Call{Method: http.MethodPost, Path: "/work", Priority: tt.priority, Class: "work"})
			slow.waitArrived(t)
			delay := binValue(binOf(5 * time.Millisecond)) // the seeded p95
			if tt.wantHedge {
				if k := timers.fire(delay); k != 1 {
					t.Fatalf("%d hedge timers of %v armed, want 1 (armed: %v)", k, delay, timers.armed())
				}
				if tt.denied {
					// The call takes the firing before the slow answer is let go.
					eventually(t, "hedge denied", func() bool { return p.Counters().HedgesDenied == 1 })
				} else {
					fast.waitArrived(t) // the hedge reached the other node
				}
			} else if armed := timers.armed(); len(armed) != 0 {
				t.Fatalf("timers armed %v, want none: this call is never hedged", armed)
			}
			if !tt.hedgeWins {
				slow.releaseAll()
			}
			r := <-done
			if r.err != nil || r.body != "ok" {
				t.Fatalf("body %q err %v", r.body, r.err)
			}
			c := p.Counters()
			var sent, won, denied uint64
			if tt.wantHedge && !tt.denied {
				sent = 1
			}
			if tt.hedgeWins {
				won = 1
			}
			if tt.denied {
				denied = 1
			}
			if c.HedgesSent != sent || c.HedgesWon != won || c.HedgesDenied != denied || c.RetriesSent != 0 || c.Attempts != 1+sent {
				t.Fatalf("counters %+v, want hedges sent %d won %d denied %d", c, sent, won, denied)
			}
			if tt.wantHedge && !tt.denied {
				loser := slow
				if !tt.hedgeWins {
					loser = fast
				}
				loser.waitGone(t, 1) // the losing attempt was cancelled upstream
			}
			for _, s := range p.Stats() {
				if s.Inflight != 0 || s.Failures != 0 {
					t.Fatalf("stats %+v: a cancelled loser is neither outstanding nor a failure", s)
				}
			}
		})
	}
}

// Once the first byte is back the call is answered: the pool never hedges
// a stream whose bytes the caller may already have relayed.
func TestHedgeNotAfterFirstByte(t *testing.T) {
	checkGoroutines(t)
	slow, fast := newScriptNode(t, answerFirstByte), newScriptNode(t, answerOK)
	timers := new(manualTimers)
	p := newPool(t, Config{Nodes: []string{slow.srv.URL, fast.srv.URL}, Hedge: HedgeConfig{MinPerSecond: 10}},
		first, WithClock(newFakeClock()), WithAfterFunc(timers.after))
	seedLatency(p, 0, "stream", 5*time.Millisecond, 50)
	seedLatency(p, 1, "stream", 5*time.Millisecond, 50)
	resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: HighestPriority, Class: "stream"})
	if err != nil {
		t.Fatal(err)
	}
	delay := binValue(binOf(5 * time.Millisecond))
	if timers.count(delay) != 1 {
		t.Fatalf("hedge timers armed %d times, want once", timers.count(delay))
	}
	if armed := timers.armed(); len(armed) != 0 {
		t.Fatalf("timers still armed after the first byte: %v", armed)
	}
	var b [1]byte
	if _, err := io.ReadFull(resp.Body, b[:]); err != nil || b[0] != 'o' {
		t.Fatalf("first byte %q err %v", b[:], err)
	}
	slow.releaseAll()
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(rest) != "k" || fast.hits.Load() != 0 || p.Counters().HedgesSent != 0 {
		t.Fatalf("rest %q, other node hits %d, counters %+v", rest, fast.hits.Load(), p.Counters())
	}
}
