package fakemodel

import (
	"math"
	"math/rand/v2"
	"time"
)

// z99 is the 99th percentile of the standard normal distribution.
const z99 = 2.3263478740408408

// lognormal returns mu and sigma of the lognormal (in ln ms) with the
// given p50 and p99.
func (l Latency) lognormal() (mu, sigma float64) {
	mu = math.Log(l.P50Ms)
	sigma = (math.Log(l.P99Ms) - mu) / z99
	return mu, sigma
}

// MeanMs is the mean of the distribution in milliseconds. For the lognormal
// it is exp(mu + sigma²/2).
func (l Latency) MeanMs() float64 {
	switch l.Dist {
	case DistFixed:
		return l.FixedMs
	case DistUniform:
		return (l.MinMs + l.MaxMs) / 2
	default:
		mu, sigma := l.lognormal()
		return math.Exp(mu + sigma*sigma/2)
	}
}

// Sample draws one base service time. r may be nil to use the global,
// concurrency-safe source. The lognormal is capped at the 600 s knob limit
// so a freak draw cannot park a slot for hours.
func (l Latency) Sample(r *rand.Rand) time.Duration {
	var ms float64
	switch l.Dist {
	case DistFixed:
		ms = l.FixedMs
	case DistUniform:
		u := uniform(r)
		ms = l.MinMs + u*(l.MaxMs-l.MinMs)
	default:
		mu, sigma := l.lognormal()
		var z float64
		if r != nil {
			z = r.NormFloat64()
		} else {
			z = rand.NormFloat64()
		}
		ms = math.Min(math.Exp(mu+sigma*z), maxMs)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

func uniform(r *rand.Rand) float64 {
	if r != nil {
		return r.Float64()
	}
	return rand.Float64()
}
