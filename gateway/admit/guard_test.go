package admit

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var lagThresholds = Thresholds{
	Yellow: Signals{LagMs: 50, HeapBytes: 1 << 30},
	Red:    Signals{LagMs: 100, QueueFill: 0.9},
	Black:  Signals{LagMs: 500},
}

func TestThresholdsValidate(t *testing.T) {
	tests := []struct {
		name string
		th   Thresholds
		want string // "" valid
	}{
		{"zero", Thresholds{}, ""},
		{"lag ladder", lagThresholds, ""},
		{"equal levels", Thresholds{Yellow: Signals{SchedMs: 10}, Red: Signals{SchedMs: 10}}, ""},
		{"skips a level", Thresholds{Yellow: Signals{GCPauseMs: 5}, Black: Signals{GCPauseMs: 50}}, ""},
		{"decreasing", Thresholds{Yellow: Signals{LagMs: 100}, Red: Signals{LagMs: 50}}, "red.lag_ms"},
		{"decreasing across a gap", Thresholds{Yellow: Signals{Inflight: 100}, Black: Signals{Inflight: 50}}, "black.inflight"},
		{"negative", Thresholds{Red: Signals{SchedMs: -1}}, "red.sched_ms"},
		{"NaN", Thresholds{Yellow: Signals{UpstreamLatencyRatio: math.NaN()}}, "yellow.upstream_latency_ratio"},
		{"Inf", Thresholds{Black: Signals{GCPauseMs: math.Inf(1)}}, "black.gc_pause_ms"},
		{"fill above 1", Thresholds{Red: Signals{QueueFill: 1.5}}, "red.queue_fill"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.th.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.want)
			}
		})
	}
	g := NewGuard(Thresholds{})
	if err := g.SetThresholds(Thresholds{Red: Signals{LagMs: -5}}); err == nil {
		t.Fatal("SetThresholds accepted a negative threshold")
	}
}

// source is a synthetic signal source for the Guard.
type source struct {
	mu sync.Mutex
	s  Signals
}

func (s *source) set(v Signals) { s.mu.Lock(); s.s = v; s.mu.Unlock() }
func (s *source) get() Signals  { s.mu.Lock(); defer s.mu.Unlock(); return s.s }

func TestGuardLevels(t *testing.T) {
	tests := []struct {
		name   string
		sig    Signals
		want   Level
		reason string
	}{
		{"quiet", Signals{LagMs: 3, HeapBytes: 1 << 20}, Green, ""},
		{"lag yellow", Signals{LagMs: 60}, Yellow, "lag_ms 60 ≥ 50 (yellow)"},
		{"at threshold counts", Signals{LagMs: 50}, Yellow, "lag_ms"},
		{"heap yellow", Signals{HeapBytes: 2 << 30}, Yellow, "heap_bytes"},
		{"lag red", Signals{LagMs: 150}, Red, "lag_ms 150 ≥ 100 (red)"},
		{"queue fill red", Signals{LagMs: 1, QueueFill: 0.95}, Red, "queue_fill"},
		{"lag black", Signals{LagMs: 800, QueueFill: 1}, Black, "(black)"},
		{"unused signal", Signals{SchedMs: 1e6, GCPauseMs: 1e6}, Green, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &source{}
			src.set(tt.sig)
			g := NewGuard(lagThresholds, WithSource(src.get), WithHold(0))
			if got := g.Evaluate(time.Unix(0, 0)); got != tt.want {
				t.Fatalf("Evaluate = %v, want %v", got, tt.want)
			}
			st := g.Snapshot()
			if st.Level != tt.want || !strings.Contains(st.Reason, tt.reason) || (tt.reason == "" && st.Reason != "") {
				t.Fatalf("Snapshot() = %+v, want level %v reason containing %q", st, tt.want, tt.reason)
			}
			if st.LagP99Ms != tt.sig.LagMs || st.HeapBytes != tt.sig.HeapBytes {
				t.Fatalf("Snapshot() signals = %+v, want %+v", st, tt.sig)
			}
			for p := Priority(0); p < NumPriorities; p++ {
				if g.Admit(p) != tt.want.Admits(p) {
					t.Fatalf("Admit(%v) = %v at %v", p, g.Admit(p), tt.want)
				}
			}
		})
	}
}

// TestGuardHysteresis: the level rises at once and falls only after the
// signals stayed below it for the hold, to the highest level seen meanwhile.
func TestGuardHysteresis(t *testing.T) {
	src := &source{}
	g := NewGuard(lagThresholds, WithSource(src.get), WithHold(2*time.Second))
	at := func(sec float64, lag float64, want Level) {
		t.Helper()
		src.set(Signals{LagMs: lag})
		if got := g.Evaluate(time.Unix(0, 0).Add(time.Duration(sec * float64(time.Second)))); got != want {
			t.Fatalf("t=%.1fs lag %v: level %v, want %v", sec, lag, got, want)
		}
	}
	at(0, 0, Green)
	at(1, 200, Red)   // rises at once
	at(1.5, 0, Red)   // falling starts
	at(3.4, 0, Red)   // 1.9 s below: holds
	at(3.5, 0, Green) // 2 s below: falls
	at(4, 600, Black)
	at(4.5, 60, Black) // yellow signals: falling starts
	at(5, 0, Black)
	at(6.5, 60, Yellow) // hold over: falls to the highest seen (yellow), not green
	if r := g.Snapshot().Reason; !strings.Contains(r, "lag_ms") {
		t.Fatalf("reason %q after falling to yellow", r)
	}
	at(7, 120, Red) // rises again at once
	at(7.5, 0, Red) // falling starts
	at(8, 110, Red) // back at red: the fall is cancelled
	at(8.5, 0, Red) // falling starts again here
	at(10, 0, Red)  // 1.5 s: holds
	at(10.5, 0, Green)
}

func TestGuardExternalAndForced(t *testing.T) {
	th := Thresholds{
		Yellow: Signals{UpstreamLatencyRatio: 2},
		Red:    Signals{Inflight: 1000},
	}
	var ext Signals
	var mu sync.Mutex
	g := NewGuard(th, WithHold(0),
		WithSource(func() Signals { return Signals{LagMs: 1} }),
		WithExternal(func() Signals { mu.Lock(); defer mu.Unlock(); return ext }))
	set := func(s Signals) { mu.Lock(); ext = s; mu.Unlock() }
	now := time.Unix(0, 0)
	set(Signals{UpstreamLatencyRatio: 3, LagMs: 9999}) // external lag is ignored
	if l := g.Evaluate(now); l != Yellow {
		t.Fatalf("upstream ratio 3: %v, want yellow", l)
	}
	if s := g.Snapshot().Signals; s.LagMs != 1 || s.UpstreamLatencyRatio != 3 {
		t.Fatalf("merged signals %+v", s)
	}
	set(Signals{Inflight: 1500})
	if l := g.Evaluate(now); l != Red {
		t.Fatalf("inflight 1500: %v, want red", l)
	}
	black := Black
	g.SetForced(&black)
	if g.Level() != Black || g.Admit(P0) {
		t.Fatal("forced black still admits")
	}
	if st := g.Snapshot(); !st.Forced || st.Reason != "forced" {
		t.Fatalf("Snapshot() = %+v while forced", st)
	}
	set(Signals{})
	g.Evaluate(now)
	if g.Level() != Black {
		t.Fatal("evaluation overrode the forced level")
	}
	bad := Level(7)
	g.SetForced(&bad) // ignored
	if g.Level() != Black {
		t.Fatal("an invalid forced level was applied")
	}
	g.SetForced(nil)
	if g.Level() != Green || !g.Admit(P2) {
		t.Fatalf("unforced level %v, want the computed green", g.Level())
	}
	if err := g.SetThresholds(Thresholds{Yellow: Signals{LagMs: 0.5}}); err != nil {
		t.Fatal(err)
	}
	if l := g.Evaluate(now); l != Yellow {
		t.Fatalf("after SetThresholds: %v, want yellow", l)
	}
}

func TestGuardRunWithSource(t *testing.T) {
	src := &source{}
	g := NewGuard(lagThresholds, WithSource(src.get), WithEvalInterval(5*time.Millisecond), WithHold(0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	src.set(Signals{LagMs: 120})
	waitLevel(t, g, Red)
	src.set(Signals{})
	waitLevel(t, g, Green)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx was canceled")
	}
}

func waitLevel(t *testing.T, g *Guard, want Level) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.Level() != want {
		if time.Now().After(deadline) {
			t.Fatalf("level %v, want %v", g.Level(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGuardLagProbeSeesBlockedScheduler: with more busy goroutines than Ps
// (each spinning 2 ms between yields, for a bounded 400 ms), the probe's
// timer fires late and goroutines wait to run. The assertions are lower
// bounds only.
func TestGuardLagProbeSeesBlockedScheduler(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the CPU for 400 ms")
	}
	g := NewGuard(Thresholds{Yellow: Signals{LagMs: 1}},
		WithProbeInterval(5*time.Millisecond), WithWindow(time.Second),
		WithEvalInterval(50*time.Millisecond), WithHold(0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	time.Sleep(200 * time.Millisecond)
	quiet := g.Snapshot()

	// Saturate the scheduler until the guard sees it (at most 5 s): the
	// machine may be shared, so the test waits for the effect rather than
	// assuming it shows within a fixed time.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4*runtime.GOMAXPROCS(0); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				spin := time.Now().Add(2 * time.Millisecond)
				for time.Now().Before(spin) {
				}
				runtime.Gosched()
			}
		}()
	}
	var busy GuardStats
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		busy = g.Snapshot()
		if busy.LagP99Ms >= 2 && busy.SchedP99Ms >= 0.5 && busy.Level >= Yellow {
			break
		}
	}
	close(stop)
	wg.Wait()
	cancel()
	<-done
	t.Logf("quiet: lag p50 %.2f p99 %.2f ms, sched p99 %.3f ms; busy: lag p50 %.2f p99 %.2f ms, sched p99 %.3f ms, gc p99 %.3f ms, heap %d, level %v (%s)",
		quiet.LagP50Ms, quiet.LagP99Ms, quiet.SchedP99Ms, busy.LagP50Ms, busy.LagP99Ms, busy.SchedP99Ms, busy.GCPauseP99Ms, busy.HeapBytes, busy.Level, busy.Reason)
	if busy.LagP99Ms < 2 {
		t.Errorf("lag p99 %.2f ms with the scheduler saturated, want ≥ 2 ms", busy.LagP99Ms)
	}
	if busy.SchedP99Ms < 0.5 {
		t.Errorf("scheduler latency p99 %.3f ms with the scheduler saturated, want ≥ 0.5 ms", busy.SchedP99Ms)
	}
	if busy.HeapBytes == 0 {
		t.Error("live heap 0")
	}
	if busy.Level < Yellow {
		t.Errorf("level %v with lag over the 1 ms threshold", busy.Level)
	}
}

func TestGuardAdmitZeroAllocs(t *testing.T) {
	g := NewGuard(lagThresholds)
	if a := testing.AllocsPerRun(1000, func() { g.Admit(P1) }); a != 0 {
		t.Fatalf("%v allocs per Admit", a)
	}
}
