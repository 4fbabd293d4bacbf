package pressure

import (
	"errors"
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

func TestChurnAllocates(t *testing.T) {
	g := New()
	defer g.Stop()
	const rate = 64.0 // MB/s
	before := heapAllocs()
	start := time.Now()
	if err := g.Set(Config{ChurnMBPerS: rate}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := g.Set(Config{}); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start).Seconds()
	churned := float64(g.Stats().ChurnedBytes)
	heap := float64(heapAllocs() - before)
	want := rate * mb * el
	// Accounting is exact-ish from elapsed time; allow for the first tick
	// and scheduler noise, but demand the bytes really hit the heap.
	if churned < 0.5*want || churned > 1.2*want {
		t.Errorf("churned %.1f MB in %.2fs, want about %.1f MB", churned/mb, el, want/mb)
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

func TestHogDutyAndStop(t *testing.T) {
	g := New()
	defer g.Stop()
	goroutines := runtime.NumGoroutine()
	start := time.Now()
	if err := g.Set(Config{CPUHogGoroutines: 2, CPUHogDuty: 0.3}); err != nil {
		t.Fatal(err)
	}
	if n := runtime.NumGoroutine(); n < goroutines+2 {
		t.Fatalf("goroutines %d, want at least %d", n, goroutines+2)
	}
	time.Sleep(400 * time.Millisecond)
	spun := g.Stats().HogSpin
	// The hogs ran from the first Set until now: on a loaded machine the
	// sleep oversleeps, so the bound is on the time that really passed.
	d := time.Since(start)
	if err := g.Set(Config{}); err != nil {
		t.Fatal(err)
	}
	// 2 goroutines × 30 % × d of spinning at most (plus one slice); on a
	// loaded machine less. It must be bounded and non-zero.
	if spun <= 0 || spun > 2*d*45/100 {
		t.Fatalf("hogs spun %v in %v with 2×0.3 duty", spun, d)
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Fatalf("goroutines %d after stop, want %d", n, goroutines)
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
