package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/levee-lab/levee/fakemodel"
)

// startFakeModel serves a real fake model node on loopback with knobs k.
func startFakeModel(t *testing.T, k fakemodel.Knobs) *fakemodel.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := fakemodel.NewNode(ln, fakemodel.WithKnobs(k), fakemodel.WithAdminToken("upstream-test-admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	go n.Serve()
	t.Cleanup(func() { n.Close() })
	return n
}

// The fake model itself sees an abandoned attempt leave: a hung request
// ends counted as "hang" and its slot is free again, whether the attempt
// was given up by its timeout (P2) or lost to a hedge (P0).
func TestFakeModelSeesAbandonedAttempts(t *testing.T) {
	for _, tt := range []struct {
		name     string
		priority int
		fire     func(timeout, hedge time.Duration) time.Duration // which timer to fire
	}{
		{"attempt timeout", LowestPriority, func(timeout, _ time.Duration) time.Duration { return timeout }},
		{"hedge wins", HighestPriority, func(_, hedge time.Duration) time.Duration { return hedge }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := fakemodel.DefaultKnobs()
			k.Latency.Dist, k.Latency.FixedMs = fakemodel.DistFixed, 20
			k.AbortOnDisconnect = true
			hung := k
			hung.HangRate = 1
			a, b := startFakeModel(t, hung), startFakeModel(t, k)
			timers := new(manualTimers)
			p := newPool(t, Config{
				Nodes:       []string{"http://" + a.Addr(), "http://" + b.Addr()},
				RetryBudget: RetryBudgetConfig{MinPerSecond: 10},
				Hedge:       HedgeConfig{MinPerSecond: 10},
			}, first, WithClock(newFakeClock()), WithAfterFunc(timers.after))
			seedLatency(p, 0, "predict", 20*time.Millisecond, 50)
			seedLatency(p, 1, "predict", 20*time.Millisecond, 50)
			timeout := max(DefaultAttemptMin, time.Duration(2*float64(binValue(binOf(20*time.Millisecond)))))
			hedge := binValue(binOf(20 * time.Millisecond))

			done := make(chan error, 1)
			go func() {
				resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/v1/predict",
					Body: []byte(`{"features":[1,2,3]}`), Header: http.Header{"Content-Type": {"application/json"}},
					Priority: tt.priority, Class: "predict"})
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = &http.ProtocolError{ErrorString: resp.Status}
					}
				}
				done <- err
			}()
			eventually(t, "the request hangs on the fake model", func() bool { return a.Stats().InService == 1 })
			if k := timers.fire(tt.fire(timeout, hedge)); k != 1 {
				t.Fatalf("fired %d timers, want 1 (armed %v)", k, timers.armed())
			}
			if err := <-done; err != nil {
				t.Fatalf("call: %v", err)
			}
			eventually(t, "the fake model counts the hang as ended", func() bool {
				s := a.Stats()
				return s.Outcomes[fakemodel.OutcomeHang] == 1 && s.InService == 0
			})
			if s := b.Stats(); s.Outcomes[fakemodel.OutcomeOK] != 1 {
				t.Fatalf("the other node answered %v, want one ok", s.Outcomes)
			}
		})
	}
}
