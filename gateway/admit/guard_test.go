package admit

import (
	"context"
	"github.com/levee-lab/levee/internal/allocs"
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

// TestGuardShedLevel: past yellow the shed level rises in proportion to
// the excess (a small excess slowly, a large one fast), red sheds every P2
// at once and starts on P1, black refuses everything for at least the
// cooldown; below the release mark (80 % of yellow) the level falls by one
// priority per cooldown, and between the release mark and yellow it holds
// (no flapping on a signal that hovers near its watermark).
func TestGuardShedLevel(t *testing.T) {
	src := &source{}
	th := Thresholds{Yellow: Signals{LagMs: 50}, Red: Signals{LagMs: 100}, Black: Signals{LagMs: 500}}
	g := NewGuard(th, WithSource(src.get), WithHold(2*time.Second))
	now := time.Unix(0, 0)
	run := func(sec, lag float64) {
		t.Helper()
		src.set(Signals{LagMs: lag})
		for end := now.Add(time.Duration(sec * float64(time.Second))); now.Before(end); {
			now = now.Add(100 * time.Millisecond)
			g.Evaluate(now)
		}
	}
	run(1, 10)
	if g.Shed() != 0 || g.Level() != Green {
		t.Fatalf("quiet: shed %v level %v", g.Shed(), g.Level())
	}
	// Just past yellow (severity 0.1 of the yellow→red span): about 0.1 /
	// 2 s = 0.05 per second.
	run(2, 52)
	if s := g.Shed(); s < 0.08 || s > 0.12 || g.Level() != Yellow {
		t.Fatalf("2 s just past yellow: shed %.3f level %v, want ≈ 0.1, yellow", s, g.Level())
	}
	// Hovering between the release mark (40) and yellow: holds.
	before := g.Shed()
	run(3, 45)
	if g.Shed() != before {
		t.Fatalf("between release and yellow: shed moved %.3f → %.3f", before, g.Shed())
	}
	// Far past yellow (severity 0.8): 0.4 per second.
	run(2, 90)
	if s := g.Shed(); s < 0.85 || s > 0.95 {
		t.Fatalf("2 s at 90 ms: shed %.3f, want ≈ 0.9", s)
	}
	run(1, 120) // at red: one priority per cooldown, into P1
	if g.Shed() <= 1 || g.Level() != Red || g.Admit(P2) {
		t.Fatalf("red: shed %.3f level %v, P2 admitted %v", g.Shed(), g.Level(), g.Admit(P2))
	}
	// Quiet: one priority per half cooldown (1 s).
	run(0.5, 0)
	if s := g.Shed(); s < 0.85 || s > 0.95 || g.Level() != Yellow {
		t.Fatalf("0.5 s quiet after red: shed %.3f level %v", s, g.Level())
	}
	run(1, 0)
	if g.Shed() != 0 || g.Level() != Green {
		t.Fatalf("3 s quiet: shed %.3f level %v", g.Shed(), g.Level())
	}
	// A signal at black: P0 too, in proportion, only while it stays
	// there (a single long GC pause must not refuse P0).
	run(1, 600)
	if g.Level() == Black || ShedShare(g.Shed(), P0) > 0 {
		t.Fatalf("1 s at black from green: level %v shed %.2f, want no P0 shed yet", g.Level(), g.Shed())
	}
	run(6, 600)
	if g.Level() != Black || g.Admit(P0) {
		t.Fatalf("6 s more at black: level %v shed %.2f, P0 admitted", g.Level(), g.Shed())
	}
	run(0.1, 150) // red: P0 no longer shed
	if g.Level() != Red || g.Shed() > 2 {
		t.Fatalf("back at red: level %v shed %.2f", g.Level(), g.Shed())
	}
	if st := g.Snapshot(); st.Shed != g.Shed() || st.ShedShare[P2] != ShedShare(st.Shed, P2) {
		t.Fatalf("snapshot %+v disagrees with shed %v", st, g.Shed())
	}
}

// TestGuardProportionalAdmit: a shed level refuses its share of a
// priority, spread evenly, and never P0 below black.
func TestGuardProportionalAdmit(t *testing.T) {
	tests := []struct {
		x    float64
		want [NumPriorities]float64 // share admitted
	}{
		{0, [NumPriorities]float64{1, 1, 1}},
		{0.25, [NumPriorities]float64{1, 1, 0.75}},
		{0.9, [NumPriorities]float64{1, 1, 0.1}},
		{1, [NumPriorities]float64{1, 1, 0}},
		{1.5, [NumPriorities]float64{1, 0.5, 0}},
		{2, [NumPriorities]float64{1, 0, 0}},
	}
	for _, tt := range tests {
		g := NewGuard(Thresholds{})
		g.shed.Store(math.Float64bits(tt.x))
		for p := range NumPriorities {
			const n = 10000
			ok := 0
			run := 0 // longest run of refusals: spread evenly, not in bursts
			cur := 0
			for range n {
				if g.Admit(Priority(p)) {
					ok++
					cur = 0
				} else if cur++; cur > run {
					run = cur
				}
			}
			got := float64(ok) / n
			if math.Abs(got-tt.want[p]) > 0.01 {
				t.Errorf("shed %v %v: admitted %.3f, want %.2f", tt.x, Priority(p), got, tt.want[p])
			}
			if share := 1 - tt.want[p]; share > 0 && share < 1 && float64(run) > 3/(1-share) {
				t.Errorf("shed %v %v: %d refusals in a row", tt.x, Priority(p), run)
			}
		}
	}
}

// TestGuardRecordsChanges: every level change is recorded with the signal
// and value that caused it (the cause of a fall is "", every signal below
// its release mark), numbered, and the latest keepChanges are kept.
func TestGuardRecordsChanges(t *testing.T) {
	src := &source{}
	th := Thresholds{Yellow: Signals{LagMs: 50, QueueFill: 0.8}, Red: Signals{LagMs: 100}}
	g := NewGuard(th, WithSource(src.get), WithHold(time.Second))
	now := time.Unix(100, 0)
	step := func(s Signals) {
		src.set(s)
		now = now.Add(100 * time.Millisecond)
		g.Evaluate(now)
	}
	step(Signals{QueueFill: 0.95}) // yellow by queue fill
	for g.Level() != Green {
		step(Signals{})
	}
	for g.Level() != Red { // past red by lag: up through P2 into P1
		step(Signals{LagMs: 130})
	}
	st := g.Snapshot()
	if len(st.Changes) != 4 || st.ChangeSeq != 4 {
		t.Fatalf("changes %+v (seq %d), want 4", st.Changes, st.ChangeSeq)
	}
	c := st.Changes
	if c[0].From != Green || c[0].To != Yellow || c[0].Signal != "queue_fill" || c[0].Value != 0.95 || c[0].Threshold != 0.8 || c[0].Seq != 1 {
		t.Errorf("first change %+v", c[0])
	}
	if c[1].To != Green || c[1].Signal != "" || c[1].Shed != 0 {
		t.Errorf("second change %+v", c[1])
	}
	if c[2].To != Yellow || c[2].Signal != "lag_ms" || c[2].Value != 130 || c[2].Threshold != 100 || !c[2].At.After(c[1].At) {
		t.Errorf("third change %+v", c[2])
	}
	if c[3].From != Yellow || c[3].To != Red || c[3].Signal != "lag_ms" || c[3].Shed <= 1 {
		t.Errorf("fourth change %+v", c[3])
	}
	// The ring keeps the latest keepChanges, oldest first.
	for i := 0; i < keepChanges; i++ {
		g.SetForced(&[]Level{Yellow, Green}[i%2])
	}
	st = g.Snapshot()
	if len(st.Changes) != keepChanges || st.Changes[len(st.Changes)-1].Seq != st.ChangeSeq || st.Changes[0].Seq != st.ChangeSeq-keepChanges+1 {
		t.Fatalf("ring: %d changes, first %d last %d, seq %d", len(st.Changes), st.Changes[0].Seq, st.Changes[len(st.Changes)-1].Seq, st.ChangeSeq)
	}
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
	if l := g.Evaluate(now); l != Green {
		t.Fatalf("upstream ratio 3 with nothing queued: %v, want green (the ratio counts only while requests wait)", l)
	}
	set(Signals{UpstreamLatencyRatio: 3, QueueFill: 0.1, LagMs: 9999})
	if l := g.Evaluate(now); l != Yellow {
		t.Fatalf("upstream ratio 3 with a queue: %v, want yellow", l)
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
	if a := allocs.Total(1000, func() { g.Admit(P1) }); a != 0 {
		t.Fatalf("%d allocations in 1,000 Admits", a)
	}
}

// TestGuardRetryAfter: RetryAfter(p) is how long the shed level takes to
// fall below p once every signal is quiet: evaluating quietly for that
// long admits every request of p again, and a step sooner does not.
// Forced, a shed priority is told the cooldown; an admitted one 0.
func TestGuardRetryAfter(t *testing.T) {
	src := &source{}
	th := Thresholds{Yellow: Signals{LagMs: 50}, Red: Signals{LagMs: 100}, Black: Signals{LagMs: 500}}
	const step = 10 * time.Millisecond
	g := NewGuard(th, WithSource(src.get), WithHold(2*time.Second), WithEvalInterval(step))
	now := time.Unix(0, 0)
	run := func(d time.Duration, lag float64) {
		src.set(Signals{LagMs: lag})
		for end := now.Add(d); now.Before(end); {
			now = now.Add(step)
			g.Evaluate(now)
		}
	}
	if d := g.RetryAfter(P2); d != 0 {
		t.Fatalf("green: RetryAfter(P2) = %v, want 0", d)
	}
	run(3*time.Second, 150) // red: one priority per cooldown, into P1
	x := g.Shed()
	if x <= 1 || x >= 2 {
		t.Fatalf("shed level %.3f after 3 s at red, want in (1, 2)", x)
	}
	if d := g.RetryAfter(P0); d != 0 {
		t.Errorf("P0 admitted at red: RetryAfter(P0) = %v, want 0", d)
	}
	// P2: the whole shed level at one priority per second (half the 2 s
	// cooldown).
	if got, want := g.RetryAfter(P2), time.Duration(x*float64(time.Second)); got != want {
		t.Errorf("RetryAfter(P2) = %v, want %v (shed level %.3f)", got, want, x)
	}
	d := g.RetryAfter(P1)
	if d <= 0 {
		t.Fatalf("RetryAfter(P1) = %v with P1 partly shed", d)
	}
	quiet := d.Truncate(step)
	run(quiet-step, 0)
	if ShedShare(g.Shed(), P1) <= 0 {
		t.Errorf("P1 no longer shed a step before its RetryAfter %v: shed %.4f", d, g.Shed())
	}
	run(d-(quiet-step), 0)
	if ShedShare(g.Shed(), P1) > 0 || !g.Admit(P1) {
		t.Errorf("P1 still shed after its RetryAfter %v of quiet: shed %.4f", d, g.Shed())
	}
	red := Red
	g.SetForced(&red)
	if got := g.RetryAfter(P1); got != 2*time.Second {
		t.Errorf("forced red: RetryAfter(P1) = %v, want the cooldown 2s", got)
	}
	if got := g.RetryAfter(P0); got != 0 {
		t.Errorf("forced red: RetryAfter(P0) = %v, want 0", got)
	}
}
