package load

import (
	"math"
	"math/rand/v2"
	"time"
)

// arrivalProcess draws the gap before the next arrival at a given rate.
// A gap too long to represent (a tiny rate, or a long random draw)
// saturates at the largest Duration, and time.Time.Add saturates too: such
// an arrival lies beyond any end and is never offered.
// It is used by the scheduler goroutine only and is not safe for concurrent
// use. Its draws depend on the seed alone, so a schedule is reproducible.
type arrivalProcess interface {
	gap(rate float64) time.Duration
}

// constantArrivals spaces arrivals exactly 1/rate apart.
type constantArrivals struct{}

func (constantArrivals) gap(rate float64) time.Duration {
	return saturatedNs(float64(time.Second) / rate)
}

// poissonArrivals draws exponential gaps with mean 1/rate, so arrivals form
// a Poisson process.
type poissonArrivals struct{ rng *rand.Rand }

func (p poissonArrivals) gap(rate float64) time.Duration {
	return saturatedNs(p.rng.ExpFloat64() / rate * float64(time.Second))
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

func newArrivals(kind string, seed int64) arrivalProcess {
	if kind == ArrivalPoisson {
		// A stream of its own, so the mix draws do not shift the gaps.
		return poissonArrivals{rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
	}
	return constantArrivals{}
}
