package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/gateway/admit"
	"github.com/levee-lab/levee/internal/wire"
)

// TestRequeueRefusedEverywhere: a request that every node refused (429:
// all slots busy, like a hosted API) waits in the gateway for a request in
// flight to end and is sent again, instead of failing — on real nodes over
// loopback, plain and streamed, with the gateway's limit above the nodes'
// slots (a static limit, which a refusal does not lower). The wait costs
// no retry token: with none in the budget the calls wait all the same.
// With the retry defense off the refusal stands as before.
func TestRequeueRefusedEverywhere(t *testing.T) {
	tests := []struct {
		name      string
		stream    bool
		retry     bool
		minPerSec float64       // the retry budget's reserve
		wait      time.Duration // the queue timeout
		wantOK    int           // of calls
		wantRest  string        // the others' status and outcome
	}{
		{name: "plain calls wait and succeed", retry: true, minPerSec: 20, wait: 10 * time.Second, wantOK: 4},
		{name: "streams wait and succeed", stream: true, retry: true, minPerSec: 20, wait: 10 * time.Second, wantOK: 4},
		{name: "the wait times out: shed", retry: true, minPerSec: 20, wait: 30 * time.Millisecond, wantOK: 1, wantRest: "503 shed_queue_timeout"},
		{name: "retry defense off: refused", retry: false, minPerSec: 20, wait: 10 * time.Second, wantOK: 1, wantRest: "502 error"},
		{name: "no retry token: they wait all the same", retry: true, minPerSec: 0, wait: 10 * time.Second, wantOK: 4},
	}
	const calls = 4
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := fakemodel.DefaultKnobs()
			k.Slots, k.Overflow = 1, fakemodel.OverflowReject
			k.Latency.Dist, k.Latency.FixedMs = fakemodel.DistFixed, 150
			k.TTFTMs, k.TokensPerS = 150, 5000
			node := startNode(t, k)
			s := startGateway(t, func(c *gateway.Config) {
				// Four places in front of one slot: the gateway admits
				// what the node refuses.
				lim := admit.BulkheadConfig{Limiter: admit.LimiterConfig{Algorithm: admit.AlgoStatic, Limit: calls, Min: 1, Max: calls}, QueueSize: 16, QueueTimeout: tt.wait}
				c.Classes.AI, c.Classes.Stream = lim, lim
				c.Upstream.RetryBudget.MinPerSecond = tt.minPerSec
				c.Upstream.Hedge.Disabled = true
				c.Defenses.Retry = tt.retry
				c.Defenses.Guard, c.Defenses.RateLimit, c.Defenses.Fallback = false, false, false
			}, node)
			body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`
			if tt.stream {
				body = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":4}`
			}
			var wg sync.WaitGroup
			outcomes := make([]string, calls)
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+wire.PathChat, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer k0")
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						outcomes[i] = "transport: " + err.Error()
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					o := resp.Header.Get(wire.HeaderOutcome)
					if f := resp.Trailer.Get(wire.HeaderOutcomeFinal); f != "" {
						o = f
					}
					outcomes[i] = fmt.Sprintf("%d %s", resp.StatusCode, o)
					if tt.stream && resp.StatusCode == http.StatusOK && !strings.Contains(string(b), "[DONE]") {
						outcomes[i] += " (stream cut)"
					}
				}()
			}
			wg.Wait()
			ok := 0
			for _, o := range outcomes {
				if o == "200 ok" {
					ok++
				} else if o != tt.wantRest {
					t.Errorf("outcome %q: want 200 ok or %q", o, tt.wantRest)
				}
			}
			if ok != tt.wantOK {
				t.Fatalf("%d of %d calls ok (%v), want %d", ok, calls, outcomes, tt.wantOK)
			}
			// Every call ends in exactly one outcome, waits included. A
			// relayed answer is counted once its last write ended, which
			// its client may see first: wait for the count.
			if n := waitMetric(t, s, wire.MetricRequests, nil, calls); n != calls {
				t.Errorf("%s counts %v outcomes for %d calls", wire.MetricRequests, n, calls)
			}
			sent := metric(t, s, wire.MetricRetries, map[string]string{wire.LabelResult: wire.RetrySent})
			// One slot: each round serves one call and the rest wait for
			// it to end, free (before the fourteenth pass: a token each,
			// 3 + 2 + 1). One may find the served call just ended and
			// nothing else in flight: that one pays.
			if tt.wantOK == calls && sent > 1 {
				t.Errorf("retries sent %v, want at most 1: a wait for a place a call in flight frees takes no token", sent)
			}
		})
	}
}

// TestRequeueWithNothingInFlightStands: a call that every node refused
// while nothing else of the gateway's was in flight (the node's slot is
// held by a caller that bypasses the gateway) has no Release to wait for
// and would go straight back to the full node. The fake model's 429 says
// Retry-After: 1, so it does not: the refusal stands at once, no retry
// token asked — one outcome, 502 error, no loop. (Without a Retry-After
// it would pay a token; with none left the refusal stands all the same:
// TestRequeueHonoursRetryAfter.)
func TestRequeueWithNothingInFlightStands(t *testing.T) {
	k := fakemodel.DefaultKnobs()
	k.Slots, k.Overflow = 1, fakemodel.OverflowReject
	k.Latency.Dist, k.Latency.FixedMs = fakemodel.DistFixed, 3000
	node := startNode(t, k)
	s := startGateway(t, func(c *gateway.Config) {
		lim := admit.BulkheadConfig{Limiter: admit.LimiterConfig{Algorithm: admit.AlgoStatic, Limit: 4, Min: 1, Max: 4}, QueueSize: 16, QueueTimeout: 10 * time.Second}
		c.Classes.AI, c.Classes.Stream = lim, lim
		c.Upstream.RetryBudget.MinPerSecond = 0 // a call deposits a tenth of a token: none to spend
		c.Upstream.Hedge.Disabled = true
		c.Defenses.Retry = true
		c.Defenses.Guard, c.Defenses.RateLimit, c.Defenses.Fallback = false, false, false
	}, node)
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`
	post := func(addr string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+wire.PathChat, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k0")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get(wire.HeaderOutcome)
	}
	held := make(chan int, 1)
	go func() { code, _ := post(node.Addr()); held <- code }()
	deadline := time.Now().Add(5 * time.Second)
	for node.Stats().InService == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the holder never took the node's slot")
		}
		time.Sleep(time.Millisecond)
	}
	code, outcome := post(s.Addr())
	if got := fmt.Sprintf("%d %s", code, outcome); got != "502 error" {
		t.Fatalf("call through the gateway: %q, want 502 error (refused, told to come back later)", got)
	}
	for _, result := range []string{wire.RetrySent, wire.RetryDenied} {
		if n := metric(t, s, wire.MetricRetries, map[string]string{wire.LabelResult: result}); n != 0 {
			t.Errorf("retries %s %v, want 0: the node's Retry-After stands, no token is asked", result, n)
		}
	}
	if n := metric(t, s, wire.MetricRequests, nil); n != 1 {
		t.Errorf("%s counts %v outcomes for 1 call", wire.MetricRequests, n)
	}
	if c := <-held; c != http.StatusOK {
		t.Errorf("the holder's call: %d, want 200", c)
	}
}
