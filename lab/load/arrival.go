package load

import (
	"math"
	"math/rand/v2"
	"time"
)

// arrivalProcess places arrivals at a given rate. It is used by the
// scheduler goroutine only and is not safe for concurrent use. Its draws
// depend on the seed alone, so a schedule is reproducible.
//
// Times never overflow: a gap too long to represent (a tiny rate, or a long
// random draw) saturates, and time.Time.Add saturates too, so such an
// arrival lies beyond any end and is never offered.
type arrivalProcess interface {
	// first returns the first arrival when arrivals start at t at rate.
	first(t time.Time, rate float64) time.Time
	// next returns the arrival after the one at prev at rate.
	next(prev time.Time, rate float64) time.Time
	// rerate returns the next arrival when the rate changes to rate at now,
	// no arrival having come since prev (starting: prev is when arrivals
	// started, not an arrival). It is never before now.
	rerate(prev, now time.Time, rate float64, starting bool) time.Time
}

// saturatedNs converts ns nanoseconds to a Duration, saturating at the
// largest Duration (NaN and +Inf included) and at 0 below. A plain
// conversion of a value past math.MaxInt64 is implementation-defined (on
// amd64 it gives a negative Duration: arrivals forever in the past).
func saturatedNs(ns float64) time.Duration {
	switch {
	case !(ns < math.MaxInt64): // also NaN
		return math.MaxInt64
	case ns <= 0:
		return 0
	}
	return time.Duration(ns)
}

// constantArrivals places arrivals at anchor + k/rate for k = 0, 1, …,
// each offset computed from k (rounded up to the nanosecond) rather than
// summed gap by gap, so [anchor, end) holds exactly ⌈rate×(end−anchor)⌉
// arrivals. The anchor moves when the rate changes or an arrival lies off
// the grid (the scheduler sent it at once after a rate change).
type constantArrivals struct {
	anchor time.Time
	rate   float64
}

func (c *constantArrivals) first(t time.Time, rate float64) time.Time {
	c.anchor, c.rate = t, rate
	return t
}

func (c *constantArrivals) next(prev time.Time, rate float64) time.Time {
	k := math.Round(prev.Sub(c.anchor).Seconds() * c.rate)
	if rate != c.rate || prev.Before(c.anchor) || !c.at(k).Equal(prev) {
		c.anchor, c.rate, k = prev, rate, 0
	}
	return c.at(k + 1)
}

// rerate keeps the grid's phase: the arrival one new gap after prev, or
// now when that has passed (the gap since prev already exceeds it).
func (c *constantArrivals) rerate(prev, now time.Time, rate float64, starting bool) time.Time {
	n := c.first(prev, rate)
	if !starting {
		n = c.next(prev, rate)
	}
	if n.Before(now) {
		return now
	}
	return n
}

// at is the arrival k gaps after the anchor.
func (c *constantArrivals) at(k float64) time.Time {
	return c.anchor.Add(saturatedNs(math.Ceil(k * float64(time.Second) / c.rate)))
}

// poissonArrivals draws exponential gaps with mean 1/rate, so arrivals form
// a Poisson process (memoryless: the first arrival is one gap after the
// start too).
type poissonArrivals struct{ rng *rand.Rand }

func (p poissonArrivals) first(t time.Time, rate float64) time.Time { return t.Add(p.gap(rate)) }

func (p poissonArrivals) next(prev time.Time, rate float64) time.Time { return prev.Add(p.gap(rate)) }

// rerate draws the next gap from now: the process is memoryless, so given
// no arrival since prev the wait from now is exponential at the new rate.
// (Redrawing from prev instead put an arrival at now whenever the new draw
// fell before it — with the lab changing the rate every 50 ms of a ramp,
// half the arrivals sat on those instants and the rate was off.)
func (p poissonArrivals) rerate(_, now time.Time, rate float64, _ bool) time.Time {
	return now.Add(p.gap(rate))
}

func (p poissonArrivals) gap(rate float64) time.Duration {
	return saturatedNs(p.rng.ExpFloat64() / rate * float64(time.Second))
}

func newArrivals(kind string, seed int64) arrivalProcess {
	if kind == ArrivalPoisson {
		// A stream of its own, so the mix draws do not shift the gaps.
		return poissonArrivals{rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
	}
	return &constantArrivals{}
}
