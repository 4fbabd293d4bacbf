package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// gatedServer holds every request until the gate that was current when it
// arrived is opened, then answers ok and shed_overload in turn.
type gatedServer struct {
	*httptest.Server
	received atomic.Int64
	n        atomic.Int64
	mu       sync.Mutex
	gate     chan struct{} // guarded by mu
}

func newGatedServer(t *testing.T) *gatedServer {
	s := &gatedServer{gate: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		g := s.gate
		s.mu.Unlock()
		s.received.Add(1)
		select {
		case <-g:
		case <-r.Context().Done():
			return
		}
		if s.n.Add(1)%2 == 0 {
			w.Header().Set(wire.HeaderOutcome, wire.OutcomeShedOverload.String())
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("pong"))
	}))
	t.Cleanup(s.Close)
	return s
}

// next makes later requests wait on a new gate and returns the one before.
func (s *gatedServer) next() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gate
	s.gate = make(chan struct{})
	return g
}

func (s *gatedServer) waitReceived(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s.received.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("server received %d requests, want %d", s.received.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitEnded(t *testing.T, g *Generator, n uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		tot := g.Totals()
		if tot.Offered-uint64(tot.Unaccounted()) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests ended, want %d", tot.Offered-uint64(tot.Unaccounted()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A Tracker counts the requests offered in its counted epochs, whenever
// they end, and none of those in flight when it started or offered after
// its window: offered = Σ outcomes once they have ended, however many were
// in flight at either edge.
func TestTrackerCountsByOfferEpoch(t *testing.T) {
	srv := newGatedServer(t)
	g, fc, cancel, stop := startStandardRun(t, srv.URL, 100, 30*time.Second)
	defer cancel()

	advance(t, fc, 100*time.Millisecond) // 11 in flight before the tracker (0, 10, …, 100 ms)
	srv.waitReceived(t, 11)
	before := srv.next()
	tr := g.Track()
	defer tr.Close()
	if e, _ := tr.Mark(true); e != 1 {
		t.Fatalf("first Mark started epoch %d, want 1", e)
	}
	advance(t, fc, 200*time.Millisecond) // 20 in the window
	srv.waitReceived(t, 31)
	inWindow := srv.next()
	close(before) // the 11 end inside the window: not counted
	waitEnded(t, g, 11)
	tr.Mark(false)
	advance(t, fc, 100*time.Millisecond) // 10 after the window
	srv.waitReceived(t, 41)
	after := srv.next()

	tot := tr.Totals()
	if tot.Offered != 20 || tot.Outstanding != 20 || tot.Elapsed != 200*time.Millisecond {
		t.Fatalf("window before its requests ended: offered %d, outstanding %d, elapsed %v; want 20, 20, 200ms", tot.Offered, tot.Outstanding, tot.Elapsed)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if err := tr.Wait(short, 2); err == nil {
		t.Fatal("Wait returned while the window's requests were in flight")
	}

	close(inWindow)
	wctx, cancelWait := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelWait()
	if err := tr.Wait(wctx, 2); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	tot = tr.Totals()
	if tot.Unaccounted() != 0 || tot.Offered != 20 || tot.Outstanding != 0 {
		t.Errorf("window: offered %d, outcomes %v, outstanding %d", tot.Offered, tot.Outcomes, tot.Outstanding)
	}
	if ok, shed := tot.Outcomes[wire.OutcomeOK.String()], tot.Outcomes[wire.OutcomeShedOverload.String()]; ok != 10 || shed != 10 {
		t.Errorf("window outcomes ok %d shed %d, want 10 and 10", ok, shed)
	}
	var prio uint64
	for _, p := range Priorities {
		pt := tot.ByPriority[p]
		prio += pt.Offered
		var n uint64
		for _, v := range pt.Outcomes {
			n += v
		}
		if n != pt.Offered || pt.Latency.TotalCount() != int64(n) {
			t.Errorf("%s: offered %d, ended %d, latencies %d", p, pt.Offered, n, pt.Latency.TotalCount())
		}
	}
	if prio != 20 || tot.Admitted.TotalCount() != 10 {
		t.Errorf("per-priority offered %d, admitted latencies %d; want 20 and 10", prio, tot.Admitted.TotalCount())
	}

	// Cells: the 11 from before ended in epoch 1, the window's 20 in epoch 2.
	byCell := map[[2]int]uint64{}
	for c, n := range tr.Cells() {
		byCell[[2]int{c.Offered, c.Ended}] += n
	}
	want := map[[2]int]uint64{{Before, 1}: 11, {1, 2}: 20}
	if len(byCell) != len(want) || byCell[[2]int{Before, 1}] != 11 || byCell[[2]int{1, 2}] != 20 {
		t.Errorf("cells %v, want %v", byCell, want)
	}

	close(after)
	cancel()
	stop()
	tr.Close()
	if got := tr.Totals(); got.Offered != 20 || got.Unaccounted() != 0 {
		t.Errorf("after Close: %+v", got)
	}
}

// The window of a Tick taken after Run stopped scheduling lasts until now:
// requests in flight at the stop end in real time, and a rate over their
// window must divide by the time they took to end. A window frozen at the
// stop lasted 0 s, so the sampler divided a drain of seconds by one tick.
func TestTickAfterStopCoversTheDrain(t *testing.T) {
	srv := newGatedServer(t)
	g, fc, cancel, stop := startStandardRun(t, srv.URL, 100, 30*time.Second)
	defer cancel()
	advance(t, fc, 100*time.Millisecond) // arrivals at 0, 10, …, 100 ms
	srv.waitReceived(t, 11)
	gate := srv.next()
	if w := g.Tick(); w.Offered != 11 || w.Duration != 100*time.Millisecond {
		t.Fatalf("first window: offered %d over %v, want 11 over 100ms", w.Offered, w.Duration)
	}
	cancel() // scheduling stops; the 11 are in flight
	deadline := time.Now().Add(20 * time.Second)
	for {
		g.timeMu.Lock()
		stopped := !g.stopped.IsZero()
		g.timeMu.Unlock()
		if stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run never stopped scheduling")
		}
		time.Sleep(time.Millisecond)
	}
	fc.Advance(2 * time.Second)
	close(gate)
	waitEnded(t, g, 11)
	stop()
	w := g.Tick()
	var ended uint64
	for _, n := range w.Outcomes {
		ended += n
	}
	if ended != 11 || w.Duration != 2*time.Second {
		t.Errorf("drain window: %d ended over %v, want 11 over 2s", ended, w.Duration)
	}
	if w.Elapsed != 100*time.Millisecond {
		t.Errorf("elapsed %v, want the 100ms of scheduling", w.Elapsed)
	}
}
