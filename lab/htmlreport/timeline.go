package htmlreport

import (
	"math"
	"sort"
	"time"
)

// maxPoints bounds the points of a series: the interval grows with the run
// so that a 30-minute run plots 360 points of 5 s, a 20 s run 80 of 250 ms.
const maxPoints = 600

// niceIntervals are the plotted intervals (seconds) the report chooses from.
var niceIntervals = []float64{0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600}

// tickSlack is how far the measured tick may run over a nice interval and
// still be plotted at it: the median spacing of samples taken every 250 ms
// reads a few tens of µs over 250 ms (each tick waits for its scrapes), and
// a run must not be drawn at half its resolution for that.
const tickSlack = 0.01

// chooseInterval is the shortest nice interval, no shorter than the tick
// (within tickSlack), that plots a run of span seconds in at most
// maxPoints points.
func chooseInterval(span, tick float64) float64 {
	for _, iv := range niceIntervals {
		if iv >= tick*(1-tickSlack) && math.Ceil(span/iv) <= maxPoints {
			return iv
		}
	}
	return math.Ceil(span / maxPoints)
}

// timeline places one run's samples and events on the report's time axis:
// seconds since the run (or recording) started.
type timeline struct {
	origin time.Time
	tick   float64   // seconds between samples (median)
	xs     []float64 // each sample's time
	end    float64   // the last sample's time
	// zeroBase is true when the counters of the first sample count from the
	// run's start (a headless run); false for a recording started while the
	// lab ran, whose first sample is then only a baseline.
	zeroBase bool
}

func newTimeline(r *Run) timeline {
	first := r.Samples[0]
	tl := timeline{tick: medianTick(r.Samples)}
	switch {
	case r.Summary != nil && !r.Partial && !r.Summary.Started.IsZero():
		tl.origin = r.Summary.Started
	case first.Elapsed <= 2*tl.tick:
		tl.origin = first.Time.Add(-seconds(first.Elapsed))
	default: // a killed recording: it started about a tick before its first sample
		tl.origin = first.Time.Add(-seconds(tl.tick))
	}
	tl.xs = make([]float64, len(r.Samples))
	for i, s := range r.Samples {
		tl.xs[i] = tl.x(s.Time)
	}
	tl.end = tl.xs[len(tl.xs)-1]
	// Sample.Elapsed counts from the start of load; when the origin is that
	// start, the generator's counters started with it.
	tl.zeroBase = math.Abs(tl.xs[0]-first.Elapsed) < tl.tick/2
	return tl
}

// x is t on the time axis.
func (tl timeline) x(t time.Time) float64 { return t.Sub(tl.origin).Seconds() }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// medianTick is the median spacing of the samples (0.25 s when there are
// fewer than two).
func medianTick(ss []sample) float64 {
	if len(ss) < 2 {
		return 0.25
	}
	d := make([]float64, 0, len(ss)-1)
	for i := 1; i < len(ss); i++ {
		d = append(d, ss[i].Time.Sub(ss[i-1].Time).Seconds())
	}
	sort.Float64s(d)
	if m := d[len(d)/2]; m > 0 {
		return m
	}
	return 0.25
}

// bucket is one plotted interval of one run: (end−interval, end].
type bucket struct {
	// x is the plotted time: the time of the interval's last sample, where
	// the counts and gauges its values come from end (samples come a few
	// ms after each 250 ms step, so the interval's end would draw them
	// nearly one tick late); an interval without samples (a gap) is
	// plotted at its end.
	x    float64
	dt   float64  // seconds the counter differences cover
	prev *sample  // the sample before the interval; nil: counters from zero
	s    []sample // samples in the interval, oldest first; none: a gap
	w    []float64
}

// buckets cuts the run into intervals of iv seconds up to its last sample.
// Each sample belongs to the interval its time closes; its weight is the
// time since the previous sample.
func (tl timeline) buckets(ss []sample, iv float64) []bucket {
	n := max(1, int(math.Ceil(tl.end/iv-1e-9)))
	bs := make([]bucket, n)
	for i := range bs {
		bs[i].x = math.Min(float64(i+1)*iv, tl.end)
	}
	var prev *sample // nil: the counters start from zero
	prevX, start := 0.0, 0
	if !tl.zeroBase { // the first sample is only the baseline
		prev, prevX, start = &ss[0], tl.xs[0], 1
	}
	for i := start; i < len(ss); i++ {
		x := tl.xs[i]
		k := max(0, min(int(math.Ceil(x/iv-1e-9))-1, n-1))
		b := &bs[k]
		if len(b.s) == 0 {
			b.prev, b.dt = prev, -prevX // completed below
		}
		b.s = append(b.s, ss[i])
		b.w = append(b.w, math.Max(x-prevX, 0))
		prev, prevX = &ss[i], x
	}
	for k := range bs {
		if m := len(bs[k].s); m > 0 {
			last := tl.x(bs[k].s[m-1].Time)
			bs[k].dt += last
			bs[k].x = last
		}
	}
	return bs
}
