package pressure

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

const (
	mb = 1 << 20
	// pageSize is the stride at which allocated memory is touched, so the
	// kernel really backs it with pages.
	pageSize = 4096
	// churnTick is how often the churn goroutine allocates; small ticks keep
	// the allocation rate smooth.
	churnTick = 10 * time.Millisecond
	// churnChunk is the size of each garbage allocation. Small enough to be
	// an ordinary (non-huge) heap object class mix, big enough to be cheap.
	churnChunk = 32 << 10
	// churnMaxCatchUp caps how much a late tick allocates at once, so a
	// stalled process does not allocate a burst when it wakes.
	churnMaxCatchUp = 100 * time.Millisecond
	// ballastChunk is the unit of retained ballast.
	ballastChunk = 1 * mb
	// hogPeriod is one CPU hog cycle: spin duty×period, sleep the rest.
	hogPeriod = 10 * time.Millisecond
	// hogSlice is the longest spin between two runtime.Gosched calls.
	hogSlice = 1 * time.Millisecond
)

// Generator applies one Config at a time. The zero value is not usable; call
// New. All methods are safe for concurrent use.
type Generator struct {
	mu      sync.Mutex
	cfg     Config          // guarded by mu; the config in force
	ballast [][]byte        // guarded by mu; retained, touched chunks
	stop    chan struct{}   // guarded by mu; closed to stop churn and hogs
	wg      *sync.WaitGroup // guarded by mu; churn and hog goroutines of cfg
	stopped bool            // guarded by mu; Stop was called

	churned atomic.Uint64 // bytes of garbage allocated so far
	spun    atomic.Int64  // nanoseconds spent spinning by hogs so far

	clock clock // churn's and hogs' time source; set by New, replaced by tests
}

// New returns a Generator that applies no pressure.
func New() *Generator {
	return &Generator{clock: wallClock{}}
}

// clock is the time churn's rate and the hogs' duty cycle are measured in.
// Tests replace the wall clock with a virtual one to check both exactly,
// whatever the machine's load.
type clock interface {
	Now() time.Time
	// Sleep waits for d or until stop closes; it reports false on stop.
	Sleep(d time.Duration, stop <-chan struct{}) bool
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

// Stats are cumulative figures, for tests and metrics.
type Stats struct {
	ChurnedBytes uint64        // garbage allocated since New
	BallastBytes uint64        // ballast retained now
	HogSpin      time.Duration // CPU time spent spinning by hogs since New (wall clock while spinning)
}

// Stats reports what the Generator has done so far.
func (g *Generator) Stats() Stats {
	g.mu.Lock()
	bb := uint64(len(g.ballast)) * ballastChunk
	g.mu.Unlock()
	return Stats{ChurnedBytes: g.churned.Load(), BallastBytes: bb, HogSpin: time.Duration(g.spun.Load())}
}

// Config returns the config in force.
func (g *Generator) Config() Config {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cfg
}

// Set validates c and, when valid, replaces the pressure in force with it:
// churn and hog goroutines of the old config are stopped (and waited for)
// before the new ones start; ballast is resized, keeping what can be kept.
// Setting the config already in force does nothing. The zero Config stops
// all pressure and releases the ballast. An invalid c changes nothing and
// returns the *FieldError of Validate. After Stop, Set returns ErrStopped.
func (g *Generator) Set(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return ErrStopped
	}
	if c == g.cfg {
		return nil
	}
	g.stopWorkersLocked()
	g.resizeBallastLocked(c.BallastMB)
	g.cfg = c
	g.startWorkersLocked()
	return nil
}

// Stop removes all pressure, waits for its goroutines to exit, and makes
// later Set calls fail with ErrStopped. Stop is idempotent.
func (g *Generator) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopWorkersLocked()
	g.resizeBallastLocked(0)
	g.cfg = Config{}
	g.stopped = true
}

func (g *Generator) stopWorkersLocked() {
	if g.stop == nil {
		return
	}
	close(g.stop)
	g.wg.Wait()
	g.stop, g.wg = nil, nil
}

func (g *Generator) startWorkersLocked() {
	c := g.cfg
	hogs := c.CPUHogGoroutines
	if c.CPUHogDuty == 0 {
		hogs = 0
	}
	if c.ChurnMBPerS == 0 && hogs == 0 {
		return
	}
	stop := make(chan struct{})
	wg := new(sync.WaitGroup)
	if c.ChurnMBPerS > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.churn(c.ChurnMBPerS, stop)
		}()
	}
	for range hogs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.hog(c.CPUHogDuty, stop)
		}()
	}
	g.stop, g.wg = stop, wg
}

// resizeBallastLocked grows or shrinks the ballast to about sizeMB (rounded
// up to whole chunks). New chunks are touched page by page so they count in
// RSS, not just in virtual memory.
//
// Shrinking returns the memory at once: dropping the references frees
// nothing until the next GC, and the runtime schedules that GC for when the
// heap reaches the goal it set while the ballast was live (GOGC=100: about
// twice ballast + live heap). A process that keeps allocating would grow
// towards that goal after the pressure is gone: in the lab the gateway was
// OOM-killed at its pod limit about 35 s after a 256 MB gc_pressure fault
// was reverted. debug.FreeOSMemory runs a GC now (so the goal falls back to
// about twice the real live heap) and hands the freed pages back to the OS.
// It blocks for one GC of what is left.
func (g *Generator) resizeBallastLocked(sizeMB float64) {
	want := int((sizeMB*mb + ballastChunk - 1) / ballastChunk)
	if want < len(g.ballast) {
		for i := want; i < len(g.ballast); i++ {
			g.ballast[i] = nil
		}
		g.ballast = g.ballast[:want:want]
		if want == 0 {
			g.ballast = nil
		}
		debug.FreeOSMemory()
		return
	}
	for len(g.ballast) < want {
		b := make([]byte, ballastChunk)
		touch(b, byte(len(g.ballast)|1))
		g.ballast = append(g.ballast, b)
	}
}

// touch writes v into every page of b.
func touch(b []byte, v byte) {
	for i := 0; i < len(b); i += pageSize {
		b[i] = v
	}
	if len(b) > 0 {
		b[len(b)-1] = v
	}
}

// churn allocates garbage at rate MB/s until stop is closed. Every
// churnTick it pays an allocation budget from elapsed time (so a tick that
// comes late catches up, up to churnMaxCatchUp) and keeps a tiny ring of its
// last chunks reachable so the allocations really live on the heap and are
// really written.
func (g *Generator) churn(rate float64, stop <-chan struct{}) {
	clk := g.clock
	bytesPerNs := rate * mb / float64(time.Second)
	ring := new([8][]byte)
	var debt float64 // bytes owed
	last := clk.Now()
	for n := 0; clk.Sleep(churnTick, stop); {
		now := clk.Now()
		el := now.Sub(last)
		last = now
		if el > churnMaxCatchUp {
			el = churnMaxCatchUp
		}
		debt += bytesPerNs * float64(el)
		for debt >= 1 {
			size := churnChunk
			if debt < churnChunk {
				size = int(debt)
				if size < 1 {
					size = 1
				}
			}
			b := make([]byte, size)
			touch(b, byte(n))
			ring[n%len(ring)] = b
			n++
			debt -= float64(size)
			g.churned.Add(uint64(size))
		}
	}
}

// hog burns CPU for duty of each hogPeriod, in slices of at most hogSlice
// separated by runtime.Gosched, and sleeps for the rest of the period.
func (g *Generator) hog(duty float64, stop <-chan struct{}) {
	clk := g.clock
	spin := time.Duration(duty * float64(hogPeriod))
	rest := hogPeriod - spin
	var x uint64 = 88172645463325252
	for {
		start := clk.Now()
		for left := spin; left > 0; {
			s := min(left, hogSlice)
			sliceStart := clk.Now()
			for clk.Now().Sub(sliceStart) < s {
				for range 256 { // xorshift: real work the compiler keeps
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
				}
			}
			left -= s
			runtime.Gosched()
			select {
			case <-stop:
				g.spun.Add(int64(clk.Now().Sub(start)))
				hogSink.Store(x)
				return
			default:
			}
		}
		g.spun.Add(int64(clk.Now().Sub(start)))
		hogSink.Store(x)
		if rest > 0 && !clk.Sleep(rest, stop) {
			return
		}
	}
}

// hogSink keeps the hog's arithmetic observable so it is not optimised away.
var hogSink atomic.Uint64
