package upstream

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// With P0 traffic alone, a node on probation is probed once it has waited
// the outlier interval there, and a healed node comes back into
// rotation. Before, P0 calls never probed while another node could take
// them, so with only P0 traffic (one tenant, all P0) an ejected node
// stayed on probation forever: its capacity lost and the limiters sized
// to one node fewer (rotation hook) for good.
func TestProbationWithOnlyP0Traffic(t *testing.T) {
	checkGoroutines(t)
	clk := newFakeClock()
	bad, b, c := newScriptNode(t, answer500), newScriptNode(t, answerOK), newScriptNode(t, answerOK)
	var rotations [][2]int
	p := newPool(t, Config{
		Nodes:       []string{bad.srv.URL, b.srv.URL, c.srv.URL},
		RetryBudget: RetryBudgetConfig{MinPerSecond: 100},
		Breaker:     BreakerConfig{MinRequests: 1000},
		Outlier:     OutlierConfig{ConsecutiveFailures: 3, BaseEjectionTime: 10 * time.Second, Interval: time.Second, ProbeRequests: 2},
	}, first, WithClock(clk), WithRotationHook(func(from, to int) { rotations = append(rotations, [2]int{from, to}) }))
	call := func() {
		t.Helper()
		resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: HighestPriority})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("P0 call: %d %q", resp.StatusCode, body)
		}
	}
	for range 3 {
		call() // the bad node first (balancer), retried elsewhere
	}
	if st := p.Stats()[0].Ejection; st != "ejected" {
		t.Fatalf("after 3 failures in a row: %s, want ejected", st)
	}
	bad.mode.Store(answerOK) // healed
	clk.Advance(10 * time.Second)
	call()
	if st := p.Stats()[0].Ejection; st != "probing" || bad.hits.Load() != 3 {
		t.Fatalf("probation just began: %s, bad hits %d; want probing and no P0 call on it yet", st, bad.hits.Load())
	}
	clk.Advance(time.Second) // one interval on probation without a probe
	for range 2 {
		call()
	}
	if st := p.Stats()[0].Ejection; st != "in_rotation" || bad.hits.Load() != 5 {
		t.Fatalf("after an interval on probation and two P0 calls: %s, bad hits %d; want in_rotation after two probes", st, bad.hits.Load())
	}
	if want := [][2]int{{3, 2}, {2, 3}}; len(rotations) != 2 || rotations[0] != want[0] || rotations[1] != want[1] {
		t.Fatalf("rotation changes %v, want %v", rotations, want)
	}
}
