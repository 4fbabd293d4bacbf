package load

import (
	"math/rand/v2"
	"time"
)

// arrivalProcess draws the gap before the next arrival at a given rate.
// It is used by the scheduler goroutine only and is not safe for concurrent
// use. Its draws depend on the seed alone, so a schedule is reproducible.
type arrivalProcess interface {
	gap(rate float64) time.Duration
}

// constantArrivals spaces arrivals exactly 1/rate apart.
type constantArrivals struct{}

func (constantArrivals) gap(rate float64) time.Duration {
	return time.Duration(float64(time.Second) / rate)
}

// poissonArrivals draws exponential gaps with mean 1/rate, so arrivals form
// a Poisson process.
type poissonArrivals struct{ rng *rand.Rand }

func (p poissonArrivals) gap(rate float64) time.Duration {
	return time.Duration(p.rng.ExpFloat64() / rate * float64(time.Second))
}

func newArrivals(kind string, seed int64) arrivalProcess {
	if kind == ArrivalPoisson {
		// A stream of its own, so the mix draws do not shift the gaps.
		return poissonArrivals{rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
	}
	return constantArrivals{}
}
