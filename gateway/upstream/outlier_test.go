package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// seedOutcomes records ok successes and failed failures on node i now.
func seedOutcomes(p *Pool, i, ok, failed int) {
	for range ok {
		p.nodes[i].stats.record(p.clock.Now(), "c", false, 0)
	}
	for range failed {
		p.nodes[i].stats.record(p.clock.Now(), "c", true, 0)
	}
}

func states(p *Pool) []string {
	var out []string
	for _, s := range p.Stats() {
		out = append(out, s.Ejection)
	}
	return out
}

// The periodic check against peers, driven directly on seeded outcome and
// latency windows (no traffic, frozen clock).
func TestOutlierEvaluate(t *testing.T) {
	type seed struct {
		ok, failed int
		median     time.Duration // latency samples (ok count of them) when > 0
	}
	tests := []struct {
		name  string
		nodes []seed
		cfg   OutlierConfig
		down  []int // nodes marked down
		want  []string
	}{
		{name: "30 % failures among clean peers", nodes: []seed{{70, 30, 0}, {100, 0, 0}, {100, 0, 0}},
			want: []string{"ejected", "in_rotation", "in_rotation"}},
		{name: "5 % is within the excess", nodes: []seed{{95, 5, 0}, {100, 0, 0}, {100, 0, 0}},
			want: []string{"in_rotation", "in_rotation", "in_rotation"}},
		{name: "too few requests to judge", nodes: []seed{{10, 9, 0}, {100, 0, 0}, {100, 0, 0}},
			want: []string{"in_rotation", "in_rotation", "in_rotation"}},
		{name: "everyone fails alike: no outlier", nodes: []seed{{70, 30, 0}, {70, 30, 0}, {70, 30, 0}},
			want: []string{"in_rotation", "in_rotation", "in_rotation"}},
		{name: "3 of 20 vs 0: not significant", nodes: []seed{{17, 3, 0}, {20, 0, 0}, {20, 0, 0}},
			want: []string{"in_rotation", "in_rotation", "in_rotation"}},
		{name: "cap: only the worst of two goes", nodes: []seed{{60, 40, 0}, {50, 50, 0}, {100, 0, 0}, {100, 0, 0}},
			want: []string{"in_rotation", "ejected", "in_rotation", "in_rotation"}},
		{name: "cap 50 %: both go", nodes: []seed{{60, 40, 0}, {50, 50, 0}, {100, 0, 0}, {100, 0, 0}}, cfg: OutlierConfig{MaxEjectionPercent: 50},
			want: []string{"ejected", "ejected", "in_rotation", "in_rotation"}},
		{name: "a down node is no peer", nodes: []seed{{70, 30, 0}, {100, 0, 0}}, down: []int{1},
			want: []string{"in_rotation", "in_rotation"}},
		{name: "three times slower than peers", nodes: []seed{{50, 0, 300 * time.Millisecond}, {50, 0, 100 * time.Millisecond}, {50, 0, 100 * time.Millisecond}},
			want: []string{"ejected", "in_rotation", "in_rotation"}},
		{name: "1.5 × slower is within the ratio", nodes: []seed{{50, 0, 150 * time.Millisecond}, {50, 0, 100 * time.Millisecond}, {50, 0, 100 * time.Millisecond}},
			want: []string{"in_rotation", "in_rotation", "in_rotation"}},
		{name: "latency ratio 4", nodes: []seed{{50, 0, 300 * time.Millisecond}, {50, 0, 100 * time.Millisecond}, {50, 0, 100 * time.Millisecond}},
			cfg: OutlierConfig{LatencyRatio: 4}, want: []string{"in_rotation", "in_rotation", "in_rotation"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var urls []string
			for i := range tt.nodes {
				urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d", i+1))
			}
			p := newPool(t, Config{Nodes: urls, Outlier: tt.cfg}, WithClock(newFakeClock()))
			for i, s := range tt.nodes {
				if s.median > 0 {
					seedLatency(p, i, "c", s.median, s.ok)
					seedOutcomes(p, i, 0, s.failed)
				} else {
					seedOutcomes(p, i, s.ok, s.failed)
				}
			}
			for _, i := range tt.down {
				p.nodes[i].up.Store(false)
			}
			p.outliers.evaluate(p.clock.Now())
			got := states(p)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("states %v, want %v", got, tt.want)
			}
		})
	}
}

// A node failing every call over real HTTP: ejected after
// ConsecutiveFailures in a row (its calls retried elsewhere meanwhile),
// no traffic while ejected, probed by P1/P2 calls (never P0 while another
// node can take it) after the ejection time, back in rotation after
// ProbeRequests good probes; a failed probe doubles the ejection time.
func TestOutlierEjectAndProbe(t *testing.T) {
	checkGoroutines(t)
	clk := newFakeClock()
	bad, b, c := newScriptNode(t, answer500), newScriptNode(t, answerOK), newScriptNode(t, answerOK)
	p := newPool(t, Config{
		Nodes:       []string{bad.srv.URL, b.srv.URL, c.srv.URL},
		RetryBudget: RetryBudgetConfig{MinPerSecond: 100},
		Breaker:     BreakerConfig{MinRequests: 1000},
		Outlier:     OutlierConfig{ConsecutiveFailures: 3, BaseEjectionTime: 10 * time.Second, ProbeRequests: 2},
	}, first, WithClock(clk))
	call := func(prio int) {
		t.Helper()
		resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: prio})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("P%d call: %d %q", prio, resp.StatusCode, body)
		}
	}
	for range 3 {
		call(2) // bad first (balancer), retried on b
	}
	if st := p.Stats()[0].Ejection; st != "ejected" || bad.hits.Load() != 3 {
		t.Fatalf("after 3 failures in a row: %s, bad hits %d", st, bad.hits.Load())
	}
	for range 5 {
		call(2)
	}
	if bad.hits.Load() != 3 {
		t.Fatalf("ejected node got %d calls, want 3", bad.hits.Load())
	}

	// Ejection over, still failing: the first probe fails, ejected again
	// for twice as long.
	clk.Advance(10 * time.Second)
	call(2)
	if st := p.Stats()[0].Ejection; st != "ejected" || bad.hits.Load() != 4 {
		t.Fatalf("failed probe: %s, bad hits %d", st, bad.hits.Load())
	}
	clk.Advance(10 * time.Second)
	if st := p.Stats()[0].Ejection; st != "ejected" {
		t.Fatalf("second ejection ended after 10 s (%s), want 20 s", st)
	}
	clk.Advance(10 * time.Second)
	if st := p.Stats()[0].Ejection; st != "probing" {
		t.Fatalf("after 20 s: %s, want probing", st)
	}

	// Healed: P0 stays on nodes in rotation; P2 calls probe.
	bad.mode.Store(answerOK)
	call(0)
	if bad.hits.Load() != 4 {
		t.Fatal("a P0 call probed a node on probation")
	}
	call(2)
	if st := p.Stats()[0].Ejection; st != "probing" || bad.hits.Load() != 5 {
		t.Fatalf("after one good probe of two: %s, hits %d", st, bad.hits.Load())
	}
	call(1)
	if st := p.Stats()[0].Ejection; st != "in_rotation" || bad.hits.Load() != 6 {
		t.Fatalf("after two good probes: %s, hits %d", st, bad.hits.Load())
	}
	call(0)
	if bad.hits.Load() != 7 {
		t.Fatal("a node back in rotation gets no P0 calls")
	}
	assertCounter(t, p, "levee_upstream_ejections_total", map[string]string{"node": bad.srv.URL, "reason": ReasonConsecutive}, 1)
	assertCounter(t, p, "levee_upstream_ejections_total", map[string]string{"node": bad.srv.URL, "reason": ReasonProbe}, 1)
	for _, s := range p.Stats() {
		if s.Inflight != 0 {
			t.Fatalf("%+v outstanding", s)
		}
	}

	// Turning the breaker defense off returns every node to rotation.
	bad.mode.Store(answer500)
	for range 3 {
		call(2)
	}
	if st := p.Stats()[0].Ejection; st != "ejected" {
		t.Fatalf("not ejected again: %s", st)
	}
	p.SetBreakerEnabled(false)
	if st := states(p); fmt.Sprint(st) != "[in_rotation in_rotation in_rotation]" {
		t.Fatalf("breaker defense off: %v", st)
	}
}

// Old ejections are forgiven: after BaseEjectionTime in rotation the
// next ejection is shorter again.
func TestOutlierBackoffDecays(t *testing.T) {
	clk := newFakeClock()
	p := newPool(t, Config{Nodes: []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"},
		Outlier: OutlierConfig{BaseEjectionTime: 10 * time.Second, MaxEjectionTime: 25 * time.Second}}, WithClock(clk))
	o := p.outliers
	eject := func() time.Duration {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.ejectLocked(0, clk.Now(), ReasonFailureRate, false)
		d := o.state[0].until.Sub(clk.Now())
		o.state[0].since = clk.Now()
		o.set(p.nodes[0], InRotation, "")
		return d
	}
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second, 25 * time.Second} {
		if d := eject(); d != want {
			t.Fatalf("ejection %d: %v, want %v", i+1, d, want)
		}
	}
	// Four in a row; three forgiveness periods bring it down to one.
	for range 3 {
		clk.Advance(10 * time.Second)
		o.evaluate(clk.Now())
	}
	if d := eject(); d != 20*time.Second {
		t.Fatalf("after forgiveness: %v, want 20s (second in a row)", d)
	}
}

func assertCounter(t *testing.T, p *Pool, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := gatherValue(t, p, name, labels)
	if !ok {
		t.Fatalf("%s%v not gathered", name, labels)
	}
	if got != want {
		t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// Ejection never takes the last node in rotation that is up, whatever the
// cap allows.
func TestOutlierKeepsLastNode(t *testing.T) {
	p := newPool(t, Config{Nodes: []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"},
		Outlier: OutlierConfig{MaxEjectionPercent: 100, ConsecutiveFailures: 1}}, WithClock(newFakeClock()))
	p.nodes[2].up.Store(false)
	fail := func(i int) {
		c := p.nodes[i].stats.record(p.clock.Now(), "c", true, 0)
		p.outliers.observe(p.nodes[i], false, true, c)
	}
	fail(0)
	fail(1)
	if got := fmt.Sprint(states(p)); got != "[ejected in_rotation in_rotation]" {
		t.Fatalf("states %s: the first may go, the last live one may not", got)
	}
}

// A node much slower than its peers over real HTTP (50 ms against about a
// millisecond: a ratio no scheduling noise closes) is ejected by the
// latency rule at the next periodic check and gets no more calls.
func TestSlowNodeEjected(t *testing.T) {
	checkGoroutines(t)
	clk := newFakeClock()
	var slowHits atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/work" {
			slowHits.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(slow.Close)
	b, c := newScriptNode(t, answerOK), newScriptNode(t, answerOK)
	p := newPool(t, Config{Nodes: []string{slow.URL, b.srv.URL, c.srv.URL}}, WithClock(clk))
	call := func(prio int) {
		t.Helper()
		resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/work", Priority: prio, Class: "c"})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 90 { // sequential: least-outstanding ties rotate, 30 calls each
		call(LowestPriority)
	}
	if got := fmt.Sprint(states(p)); got != "[in_rotation in_rotation in_rotation]" {
		t.Fatalf("before the periodic check: %s", got)
	}
	clk.Advance(DefaultOutlierInterval)
	p.outliers.maybeEvaluate(clk.Now())
	if got := fmt.Sprint(states(p)); got != "[ejected in_rotation in_rotation]" {
		t.Fatalf("after the check: %s (hits %d/%d/%d)", got, slowHits.Load(), b.hits.Load(), c.hits.Load())
	}
	assertCounter(t, p, "levee_upstream_ejections_total", map[string]string{"node": slow.URL, "reason": ReasonLatency}, 1)
	before := slowHits.Load()
	for range 10 {
		call(HighestPriority)
	}
	if slowHits.Load() != before {
		t.Fatalf("the ejected slow node got %d more calls", slowHits.Load()-before)
	}
}
