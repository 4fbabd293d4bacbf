package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// A hung or silent node is abandoned after its attempt timeout, the
// abandoned request is cancelled (the node sees its client leave), and
// the call is answered by another node. Without a timeout (none measured
// yet, disabled, or the retry defense off) the caller's deadline is all
// that ends the attempt. Latencies are seeded, so the timeout is known,
// and the test fires the timer itself once the request reached the node:
// nothing depends on how fast the machine is.
func TestAttemptTimeout(t *testing.T) {
	const seed = 5 * time.Millisecond
	tests := []struct {
		name     string
		mode     int32 // the first node's behaviour
		cfg      func(*Config)
		seed     bool
		retryOff bool
		deadline time.Duration
		wantOK   bool
		wantErr  error // when not ok
		timedOut bool  // the first attempt's timeout fired and abandoned it
		fired    bool  // … fired but left it running
	}{
		{name: "hung node abandoned, answered elsewhere", mode: answerHang, seed: true, deadline: 30 * time.Second, wantOK: true, timedOut: true},
		{name: "headers but no first byte", mode: answerHeadersOnly, seed: true, deadline: 30 * time.Second, wantOK: true, timedOut: true},
		{name: "no deadline at all", mode: answerHang, seed: true, wantOK: true, timedOut: true},
		// A timeout that nothing could replace does not abandon the attempt.
		{name: "timeout not in retry_on: runs to the deadline", mode: answerHang, seed: true, deadline: 300 * time.Millisecond,
			cfg: func(c *Config) { c.RetryOn = []string{RetryOnConnect, RetryOnStatus} }, fired: true, wantErr: context.DeadlineExceeded},
		{name: "no retry token: runs to the deadline", mode: answerHang, seed: true, deadline: 300 * time.Millisecond,
			cfg: func(c *Config) { c.RetryBudget = RetryBudgetConfig{Ratio: 0.1} }, fired: true, wantErr: context.DeadlineExceeded},
		{name: "nothing measured yet: the deadline bounds it", mode: answerHang, deadline: 300 * time.Millisecond, wantErr: context.DeadlineExceeded},
		{name: "disabled", mode: answerHang, seed: true, deadline: 300 * time.Millisecond,
			cfg: func(c *Config) { c.AttemptTimeout.Disabled = true }, wantErr: context.DeadlineExceeded},
		{name: "retry defense off", mode: answerHang, seed: true, retryOff: true, deadline: 300 * time.Millisecond, wantErr: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			a, b := newScriptNode(t, tt.mode), newScriptNode(t, answerOK)
			cfg := Config{
				Nodes:          []string{a.srv.URL, b.srv.URL},
				RetryBudget:    RetryBudgetConfig{MinPerSecond: 10},
				AttemptTimeout: AttemptTimeoutConfig{Min: time.Millisecond},
				Hedge:          HedgeConfig{Disabled: true},
			}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			timers := new(manualTimers)
			p := newPool(t, cfg, first, WithClock(newFakeClock()), WithAfterFunc(timers.after))
			p.SetRetryEnabled(!tt.retryOff)
			if tt.seed {
				seedLatency(p, 0, "work", seed, 50)
				seedLatency(p, 1, "work", seed, 50)
			}
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := p.Send(ctx, Call{Method: http.MethodPost, Path: "/work", Body: []byte("x"), Class: "work"})
				done <- result{resp, err}
			}()
			a.waitArrived(t)
			// The timeout is 2 × the seeded p99 (the bin holding 5 ms).
			timeout := time.Duration(2 * float64(binValue(binOf(seed))))
			if tt.timedOut || tt.fired {
				if k := timers.fire(timeout); k != 1 {
					t.Fatalf("%d attempt timers of %v armed, want 1 (armed: %v)", k, timeout, timers.armed())
				}
			} else if armed := timers.armed(); len(armed) != 0 {
				t.Fatalf("timers armed %v, want none", armed)
			}
			r := <-done
			resp, err := r.resp, r.err
			if tt.wantOK {
				if err != nil {
					t.Fatalf("err %v, want the other node's answer", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != "ok" || b.hits.Load() != 1 {
					t.Fatalf("body %q, other node hits %d", body, b.hits.Load())
				}
			} else if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			a.waitGone(t, 1) // the abandoned attempt reached the node as a disconnect
			st, c := p.Stats(), p.Counters()
			wantTimeouts := uint64(0)
			if tt.timedOut {
				wantTimeouts = 1
			}
			if st[0].Timeouts != wantTimeouts || st[0].Failures != wantTimeouts || st[0].Inflight != 0 || st[1].Inflight != 0 {
				t.Fatalf("stats %+v, want %d timeout on the first node and nothing outstanding", st, wantTimeouts)
			}
			if tt.wantOK && (c.RetriesSent != 1 || c.Attempts != 2) {
				t.Fatalf("counters %+v, want one retry, two attempts", c)
			}
		})
	}
}

// An erroring node: each 5xx is retried on another node within the
// budget, so a P0 caller sees every call answered.
func TestErroringNodeRetried(t *testing.T) {
	checkGoroutines(t)
	a, b := newScriptNode(t, answer500), newScriptNode(t, answerOK)
	p := newPool(t, Config{
		Nodes:   []string{a.srv.URL, b.srv.URL},
		Outlier: OutlierConfig{Disabled: true}, // keep the erroring node first
		Breaker: BreakerConfig{MinRequests: 1000},
	}, first, WithClock(newFakeClock()))
	const n = 40
	ok := 0
	for range n {
		resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: HighestPriority})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			ok++
		}
		resp.Body.Close()
	}
	// Ratio 0.1, no reserve: P0 may spend every token, one per ten calls.
	if c := p.Counters(); ok != n/10 || c.RetriesSent != n/10 || c.RetriesDenied != n-n/10 {
		t.Fatalf("ok %d, counters %+v: want %d retried answers", ok, c, n/10)
	}
	if st := p.Stats(); st[0].Inflight != 0 || st[1].Inflight != 0 || st[0].Failures != n {
		t.Fatalf("stats %+v", st)
	}
}
