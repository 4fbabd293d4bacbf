package upstream

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeClock is a manually advanced Clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// checkGoroutines registers a cleanup (run after every later cleanup, so
// after servers and pools are closed) that waits for the goroutine count to
// return to its value now.
func checkGoroutines(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= base {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutines: %d now, %d at start\n%s", n, base, buf)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// eventually polls cond every 10ms for up to 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gatherValue returns the value of the counter or gauge name whose labels
// include labels, from the pool's collectors.
func gatherValue(t *testing.T, p *Pool, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range p.Collectors() {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// manualTimers is an AfterFunc whose timers fire only when the test says.
type manualTimers struct {
	mu     sync.Mutex
	timers []*manualTimer
}

type manualTimer struct {
	d       time.Duration
	f       func()
	stopped bool
	fired   bool
}

func (m *manualTimers) after(d time.Duration, f func()) func() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	tm := &manualTimer{d: d, f: f}
	m.timers = append(m.timers, tm)
	return func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		if tm.stopped || tm.fired {
			return false
		}
		tm.stopped = true
		return true
	}
}

// armed returns the durations of the timers neither stopped nor fired.
func (m *manualTimers) armed() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Duration
	for _, tm := range m.timers {
		if !tm.stopped && !tm.fired {
			out = append(out, tm.d)
		}
	}
	return out
}

// count returns how many timers of duration d were ever armed.
func (m *manualTimers) count(d time.Duration) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := 0
	for _, tm := range m.timers {
		if tm.d == d {
			k++
		}
	}
	return k
}

// fire runs the armed timers of duration d, in its own goroutines as
// time.AfterFunc would, and returns how many there were.
func (m *manualTimers) fire(d time.Duration) int {
	due := m.take(d)
	for _, f := range due {
		go f()
	}
	return len(due)
}

// take marks the armed timers of duration d fired and returns their
// functions, for the caller to run.
func (m *manualTimers) take(d time.Duration) []func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []func()
	for _, tm := range m.timers {
		if tm.d == d && !tm.stopped && !tm.fired {
			tm.fired = true
			due = append(due, tm.f)
		}
	}
	return due
}
