package admit

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Gradient is a latency-gradient limit in the style of Netflix's Gradient2.
// Each window (about one round trip: max(WindowSamples, limit) samples)
// compares the no-load RTT baseline (long term: the lowest window mean of
// the last BaselineWindows windows) with the window's mean RTT (short term):
//
//	gradient = clamp(Tolerance × baseline / short, MinGradient, 1)
//	target   = limit × gradient + (gradient == 1 ? sqrt(limit) : 0)
//	limit    = limit + Smoothing × (target − limit)
//
// When the backend queues, short ≈ baseline × limit / capacity, so the
// target is about Tolerance × capacity; when it does not, the limit probes
// upward by the queue allowance sqrt(limit). Drops cut the limit by
// MinGradient. The limit starts at the configured Limit.
type Gradient struct {
	limit atomic.Int64 // read without mu

	mu   sync.Mutex
	cfg  LimiterConfig // guarded by mu
	est  float64       // guarded by mu
	win  window        // guarded by mu
	base baseline      // guarded by mu
}

func newGradient(cfg LimiterConfig) *Gradient {
	g := &Gradient{cfg: cfg, est: float64(cfg.Limit)}
	g.base.init(cfg.BaselineWindows)
	g.limit.Store(int64(cfg.Limit))
	return g
}

// Limit returns the current limit.
func (g *Gradient) Limit() int { return int(g.limit.Load()) }

// OnSample records one finished request.
func (g *Gradient) OnSample(rtt time.Duration, inflight int, dropped bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := &g.cfg
	if c.TimeoutMs > 0 && rtt > time.Duration(c.TimeoutMs)*time.Millisecond {
		dropped = true
	}
	lim := int(g.limit.Load())
	if !g.win.add(rtt, inflight, dropped, max(c.WindowSamples, lim)) {
		return
	}
	short, drops, used := g.win.close(lim)
	base := g.base.add(short)
	var target float64
	switch {
	case drops > 0:
		target = g.est * c.MinGradient
	case short <= 0 || base <= 0:
		return
	default:
		grad := math.Max(c.MinGradient, math.Min(1, c.Tolerance*base/short))
		target = g.est * grad
		if grad == 1 {
			if !used { // app-limited: growing would prove nothing
				return
			}
			target += math.Sqrt(g.est)
		}
	}
	g.est += c.Smoothing * (target - g.est)
	g.est = clampF(g.est, c.Min, c.Max)
	g.limit.Store(int64(g.est + 0.5))
}

// window gathers the samples of one measurement window.
type window struct {
	n, drops    int
	sum         float64 // seconds, over samples not dropped
	ok          int
	maxInflight int
}

// add records a sample and reports whether the window is complete.
func (w *window) add(rtt time.Duration, inflight int, dropped bool, size int) bool {
	w.n++
	if dropped {
		w.drops++
	} else {
		w.sum += rtt.Seconds()
		w.ok++
	}
	w.maxInflight = max(w.maxInflight, inflight)
	return w.n >= size
}

// close returns the mean RTT (seconds; 0 when every sample dropped), the
// drops, and whether the limit was used (some sample saw inflight ≥ lim/2),
// and resets the window.
func (w *window) close(lim int) (mean float64, drops int, used bool) {
	if w.ok > 0 {
		mean = w.sum / float64(w.ok)
	}
	drops, used = w.drops, 2*w.maxInflight >= lim
	*w = window{}
	return
}

// baseline is the lowest window mean of the last n windows: the no-load RTT.
type baseline struct {
	ring []float64
	next int
}

func (b *baseline) init(n int) { b.ring = make([]float64, 0, max(n, 1)) }

// add records a window mean (> 0) and returns the baseline.
func (b *baseline) add(mean float64) float64 {
	if mean > 0 {
		if len(b.ring) < cap(b.ring) {
			b.ring = append(b.ring, mean)
		} else {
			b.ring[b.next] = mean
			b.next = (b.next + 1) % len(b.ring)
		}
	}
	lo := 0.0
	for i, v := range b.ring {
		if i == 0 || v < lo {
			lo = v
		}
	}
	return lo
}

func clampF(v float64, lo, hi int) float64 {
	return math.Max(float64(lo), math.Min(float64(hi), v))
}
