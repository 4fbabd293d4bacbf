package pressure

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		c     Config
		field string // "" when valid
	}{
		{"zero", Config{}, ""},
		{"max", Config{ChurnMBPerS: MaxChurnMBPerS, BallastMB: MaxBallastMB, CPUHogGoroutines: MaxCPUHogGoroutines, CPUHogDuty: MaxCPUHogDuty}, ""},
		{"negative churn", Config{ChurnMBPerS: -1}, "churn_mb_per_s"},
		{"nan churn", Config{ChurnMBPerS: math.NaN()}, "churn_mb_per_s"},
		{"inf ballast", Config{BallastMB: math.Inf(1)}, "ballast_mb"},
		{"huge ballast", Config{BallastMB: MaxBallastMB + 1}, "ballast_mb"},
		{"too many hogs", Config{CPUHogGoroutines: MaxCPUHogGoroutines + 1}, "cpu_hog_goroutines"},
		{"negative hogs", Config{CPUHogGoroutines: -1}, "cpu_hog_goroutines"},
		{"duty 1", Config{CPUHogDuty: 1}, "cpu_hog_duty"},
		{"duty negative", Config{CPUHogDuty: -0.1}, "cpu_hog_duty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want *FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(err.Error(), "must be in [") {
				t.Fatalf("Validate() = %q (field %q), want field %q and a range", err, fe.Field, tt.field)
			}
		})
	}
}

func TestSetInvalidChangesNothing(t *testing.T) {
	g := New()
	defer g.Stop()
	good := Config{BallastMB: 2}
	if err := g.Set(good); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(Config{CPUHogDuty: 2}); err == nil {
		t.Fatal("Set(invalid) = nil")
	}
	if got := g.Config(); got != good {
		t.Fatalf("Config() = %+v after invalid Set, want %+v", got, good)
	}
}

func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestChurnAllocates: churn's garbage really reaches the heap, never comes
// faster than the rate, and stops with the zero Config. It waits for an
// amount of garbage, not for a fixed time: a starved process gets its ticks
// late and, by design, drops the budget beyond churnMaxCatchUp, so how much
// a fixed time yields depends on the machine's load (TestChurnRate checks
// the rate itself, in virtual time).
func TestChurnAllocates(t *testing.T) {
	g := New()
	defer g.Stop()
	const (
		rate   = 64.0 // MB/s
		target = 16 * mb
	)
	before := heapAllocs()
	start := time.Now()
	if err := g.Set(Config{ChurnMBPerS: rate}); err != nil {
		t.Fatal(err)
	}
	deadline := start.Add(30 * time.Second)
	for g.Stats().ChurnedBytes < target {
		if time.Now().After(deadline) {
			t.Fatalf("churned %d bytes in 30 s at %g MB/s, want %d", g.Stats().ChurnedBytes, rate, target)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := g.Set(Config{}); err != nil { // waits for the churn goroutine
		t.Fatal(err)
	}
	el := time.Since(start).Seconds()
	churned := float64(g.Stats().ChurnedBytes)
	heap := float64(heapAllocs() - before)
	// The budget grows with the time the churn goroutine saw, all of it
	// within [start, now]: more than rate × el is a pacing bug.
	if most := rate * mb * el * 1.01; churned > most {
		t.Errorf("churned %.1f MB in %.2fs, more than the %.1f MB of %g MB/s", churned/mb, el, most/mb, rate)
	}
	if heap < churned*0.9 {
		t.Errorf("heap allocs grew %.1f MB, less than the %.1f MB churned: allocations did not reach the heap", heap/mb, churned/mb)
	}
	// Stopped: no more churn.
	c1 := g.Stats().ChurnedBytes
	time.Sleep(50 * time.Millisecond)
	if c2 := g.Stats().ChurnedBytes; c2 != c1 {
		t.Errorf("churn continued after zero Config: %d → %d", c1, c2)
	}
}

// TestChurnRate: in virtual time churn allocates exactly rate × elapsed;
// a tick that comes late pays at most churnMaxCatchUp of budget.
func TestChurnRate(t *testing.T) {
	const rate = 64.0 // MB/s
	tests := []struct {
		name      string
		lateEvery int           // every lateEvery-th tick comes late; 0: none
		late      time.Duration // how late it sleeps instead of churnTick
	}{
		{"on time", 0, 0},
		{"late ticks", 5, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newVirtualClock(time.Microsecond, 2*time.Second)
			clk.lateEvery, clk.late = tt.lateEvery, tt.late
			g := New()
			g.clock = clk
			start := clk.Now()
			g.churn(rate, clk.stop) // returns once the clock passed 2 s
			elapsed := clk.Now().Sub(start)
			churned := float64(g.Stats().ChurnedBytes)
			clk.mu.Lock()
			var paid time.Duration // each tick's budget, capped
			for _, d := range clk.sleepLog {
				paid += min(d, churnMaxCatchUp)
			}
			clk.mu.Unlock()
			want := rate * mb * paid.Seconds()
			t.Logf("churned %.2f MB in %v (budget for %v), want %.2f MB", churned/mb, elapsed, paid, want/mb)
			// The clock's steps (1 µs per reading) add a little budget.
			if math.Abs(churned-want) > 0.01*want {
				t.Errorf("churned %.2f MB, want %.2f MB ± 1 %%", churned/mb, want/mb)
			}
			if tt.lateEvery > 0 && churned > 0.5*rate*mb*elapsed.Seconds() {
				t.Errorf("churned %.2f MB in %v with late ticks: the catch-up is not capped", churned/mb, elapsed)
			}
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestBallastRetainedAndReleased(t *testing.T) {
	g := New()
	defer g.Stop()
	base := liveHeap()
	if err := g.Set(Config{BallastMB: 32}); err != nil {
		t.Fatal(err)
	}
	if got := g.Stats().BallastBytes; got != 32*mb {
		t.Fatalf("BallastBytes = %d, want %d", got, 32*mb)
	}
	if grown := liveHeap() - base; grown < 30*mb {
		t.Fatalf("live heap grew %d MB with 32 MB ballast", grown/mb)
	}
	if err := g.Set(Config{BallastMB: 8}); err != nil {
		t.Fatal(err)
	}
	if got := g.Stats().BallastBytes; got != 8*mb {
		t.Fatalf("BallastBytes = %d after shrink, want %d", got, 8*mb)
	}
	if err := g.Set(Config{}); err != nil {
		t.Fatal(err)
	}
	if after := liveHeap(); after > base+4*mb {
		t.Fatalf("live heap %d MB after releasing ballast, base %d MB", after/mb, base/mb)
	}
}

// TestHogDutyAndStop: hogs burn real CPU, never more than their duty of it,
// and their goroutines are gone after the zero Config. The bound is on the
// process's CPU time, not on wall clock: on a loaded machine a hog waits for
// a core inside its spin phase (HogSpin, being wall clock, grows then) but
// can only get less CPU, never more.
func TestHogDutyAndStop(t *testing.T) {
	const (
		hogs = 2
		duty = 0.3
	)
	g := New()
	defer g.Stop()
	goroutines := runtime.NumGoroutine()
	cpu0, measured := processCPU()
	start := time.Now()
	if err := g.Set(Config{CPUHogGoroutines: hogs, CPUHogDuty: duty}); err != nil {
		t.Fatal(err)
	}
	if n := runtime.NumGoroutine(); n < goroutines+hogs {
		t.Fatalf("goroutines %d, want at least %d", n, goroutines+hogs)
	}
	time.Sleep(400 * time.Millisecond)
	// Set waits for the hogs to exit: all their CPU is in [start, now].
	if err := g.Set(Config{}); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	cpu1, _ := processCPU()
	cpu := cpu1 - cpu0
	spun := g.Stats().HogSpin
	// Each hog period lasts at least hogPeriod and spins (takes CPU) for at
	// most duty of it: the hogs take at most hogs×duty×d, plus the period
	// under way when they stopped. A quarter more covers the rest of the
	// process (runtime, timers, race detector); a hog that ignores its duty
	// takes hogs×d on an idle machine, more than twice the bound.
	limit := time.Duration(float64(hogs)*duty*float64(d)*1.25) + hogs*hogPeriod
	t.Logf("hogs %d×%.1f: %v of CPU, HogSpin %v, in %v (CPU limit %v)", hogs, duty, cpu, spun, d, limit)
	if spun <= 0 {
		t.Fatalf("hogs never spun (HogSpin %v in %v)", spun, d)
	}
	if measured && cpu > limit {
		t.Fatalf("process took %v of CPU in %v with %d hogs at duty %.1f, want at most %v", cpu, d, hogs, duty, limit)
	}
	// Waiting for an observable state, not a fixed time: goroutines that
	// called wg.Done may take a moment to leave the count.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Fatalf("goroutines %d after stop, want %d", n, goroutines)
	}
}

// virtualClock is a clock whose time moves only when it is read (by
// step) or slept on (by the sleep): the hog's duty cycle in it does not
// depend on the machine's load. It closes stop once end has passed.
type virtualClock struct {
	mu       sync.Mutex
	now      time.Time
	step     time.Duration
	end      time.Time
	stop     chan struct{}
	slept    time.Duration   // guarded by mu
	sleeps   int             // guarded by mu
	sleepLog []time.Duration // guarded by mu; every completed sleep

	// When lateEvery > 0, every lateEvery-th sleep lasts late instead.
	lateEvery int
	late      time.Duration
}

func newVirtualClock(step, run time.Duration) *virtualClock {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return &virtualClock{now: start, step: step, end: start.Add(run), stop: make(chan struct{})}
}

func (c *virtualClock) advance(d time.Duration) time.Time {
	c.now = c.now.Add(d)
	if !c.now.Before(c.end) {
		select {
		case <-c.stop:
		default:
			close(c.stop)
		}
	}
	return c.now
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.advance(c.step)
}

func (c *virtualClock) Sleep(d time.Duration, stop <-chan struct{}) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-stop:
		return false
	default:
	}
	c.sleeps++
	if c.lateEvery > 0 && c.sleeps%c.lateEvery == 0 {
		d = c.late
	}
	c.slept += d
	c.sleepLog = append(c.sleepLog, d)
	c.advance(d)
	return true
}

// TestHogDutyCycle: in virtual time a hog spins for duty of each period and
// sleeps the rest, exactly, for every allowed duty. (TestHogDutyAndStop
// shows the same on real CPU, where the load of the machine blurs it.)
func TestHogDutyCycle(t *testing.T) {
	const run = time.Second // 100 periods
	for _, duty := range []float64{0.05, 0.3, 0.5, MaxCPUHogDuty} {
		t.Run(fmt.Sprint(duty), func(t *testing.T) {
			clk := newVirtualClock(5*time.Microsecond, run)
			g := New()
			g.clock = clk
			start := clk.Now()
			g.hog(duty, clk.stop) // returns once the clock passed run
			elapsed := clk.Now().Sub(start)
			spun := g.Stats().HogSpin
			clk.mu.Lock()
			slept, sleeps := clk.slept, clk.sleeps
			clk.mu.Unlock()
			periods := int(run / hogPeriod)
			t.Logf("duty %.2f: spun %v, slept %v in %d sleeps, elapsed %v", duty, spun, slept, sleeps, elapsed)
			// Reading the clock costs steps: a slice overshoots by one or
			// two. 1 % of the run is far above that and far below a wrong
			// cycle.
			const tol = 0.01
			if got := spun.Seconds() / elapsed.Seconds(); math.Abs(got-duty) > tol {
				t.Errorf("spun %.3f of the time, want %.3f ± %.2f", got, duty, tol)
			}
			if got, want := slept.Seconds()/elapsed.Seconds(), 1-duty; math.Abs(got-want) > tol {
				t.Errorf("slept %.3f of the time, want %.3f ± %.2f", got, want, tol)
			}
			if sleeps < periods*95/100 || sleeps > periods {
				t.Errorf("%d sleeps in %v, want one per %v period (%d)", sleeps, run, hogPeriod, periods)
			}
		})
	}
}

func TestSetConcurrentAndStop(t *testing.T) {
	g := New()
	cfgs := []Config{
		{},
		{ChurnMBPerS: 8},
		{BallastMB: 1, CPUHogGoroutines: 1, CPUHogDuty: 0.1},
		{ChurnMBPerS: 4, BallastMB: 2},
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				if err := g.Set(cfgs[(i+j)%len(cfgs)]); err != nil {
					t.Error(err)
					return
				}
				_ = g.Config()
				_ = g.Stats()
			}
		}()
	}
	wg.Wait()
	// Idempotent: the same config twice is fine.
	if err := g.Set(cfgs[1]); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(cfgs[1]); err != nil {
		t.Fatal(err)
	}
	g.Stop()
	g.Stop()
	if err := g.Set(cfgs[1]); !errors.Is(err, ErrStopped) {
		t.Fatalf("Set after Stop = %v, want ErrStopped", err)
	}
	if g.Config() != (Config{}) || g.Stats().BallastBytes != 0 {
		t.Fatalf("after Stop: config %+v, ballast %d", g.Config(), g.Stats().BallastBytes)
	}
}

func TestConfigPatchRoundTrip(t *testing.T) {
	c := Config{ChurnMBPerS: 8, BallastMB: 64, CPUHogGoroutines: 2, CPUHogDuty: 0.5}
	if got := (Config{}).Apply(c.Patch()); got != c {
		t.Fatalf("Apply(Patch()) = %+v, want %+v", got, c)
	}
	// A patch changes only what it names.
	got := c.Apply(wire.PressurePatch{BallastMB: wire.Ptr(0.0)})
	if want := (Config{ChurnMBPerS: 8, CPUHogGoroutines: 2, CPUHogDuty: 0.5}); got != want {
		t.Fatalf("partial Apply = %+v, want %+v", got, want)
	}
	// Validate names the field by its wire name.
	var fe *FieldError
	if err := (Config{CPUHogDuty: 2}).Validate(); !errors.As(err, &fe) || fe.Field != wire.KnobCPUHogDuty {
		t.Fatalf("Validate() = %v", err)
	}
}

// heapNow reads the runtime's heap goal and the bytes its heap objects
// occupy (live or not yet freed by a GC), without running a GC.
func heapNow() (goal, objects uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// TestBallastReleaseResetsHeapGoal: releasing the ballast gives its memory
// back at once. Dropping the references alone frees nothing until the next
// GC, and that GC waits for the heap to reach the goal set while the ballast
// was live (about twice it): a process that keeps allocating grows towards
// that goal after the ballast is "gone" (in the lab, the gateway was
// OOM-killed at its pod limit ~35 s after a 256 MB gc_pressure was reverted).
// No GC is forced here between the release and the readings.
func TestBallastReleaseResetsHeapGoal(t *testing.T) {
	const ballast = 96
	g := New()
	defer g.Stop()
	if err := g.Set(Config{BallastMB: ballast}); err != nil {
		t.Fatal(err)
	}
	runtime.GC() // the goal now counts the ballast as live
	goal, objects := heapNow()
	t.Logf("ballast held: heap goal %d MB, heap objects %d MB", goal/mb, objects/mb)
	if goal < 2*ballast*mb {
		t.Fatalf("heap goal %d MB with a %d MB ballast live, want ≥ %d MB (GOGC=100)", goal/mb, ballast, 2*ballast)
	}
	if err := g.Set(Config{}); err != nil {
		t.Fatal(err)
	}
	goal, objects = heapNow()
	t.Logf("ballast released: heap goal %d MB, heap objects %d MB", goal/mb, objects/mb)
	if goal >= ballast*mb {
		t.Errorf("heap goal %d MB after releasing a %d MB ballast: the heap may still grow to about twice the ballast before the next GC", goal/mb, ballast)
	}
	if objects >= ballast*mb/2 {
		t.Errorf("heap objects %d MB after releasing a %d MB ballast: the ballast is still on the heap", objects/mb, ballast)
	}
}
