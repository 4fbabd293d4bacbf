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

// MeanMs is the mean in milliseconds of what Sample draws. For the
// lognormal it is the mean of the capped draw min(X, C), C = 600000:
//
//	E[min(X, C)] = exp(mu + sigma²/2)·Φ((ln C − mu − sigma²)/sigma) + C·(1 − Φ((ln C − mu)/sigma))
//
// computed in logs, so a wide lognormal whose uncapped mean overflows still
// has its finite capped mean. Fixed and uniform draws are within the cap by
// validation (every millisecond knob ≤ 600000), so their means need none.
func (l Latency) MeanMs() float64 {
	switch l.Dist {
	case DistFixed:
		return l.FixedMs
	case DistUniform:
		return (l.MinMs + l.MaxMs) / 2
	default:
		mu, sigma := l.lognormal()
		return cappedLognormalMean(mu, sigma, maxMs)
	}
}

// cappedLognormalMean is E[min(X, c)] for ln X ~ N(mu, sigma²).
func cappedLognormalMean(mu, sigma, c float64) float64 {
	lnC := math.Log(c)
	if !(sigma > 0) {
		return math.Min(math.Exp(mu), c)
	}
	below := math.Exp(mu + sigma*sigma/2 + logPhi((lnC-mu-sigma*sigma)/sigma))
	above := c * normalTail((lnC-mu)/sigma)
	return below + above
}

// normalTail is 1 − Φ(x), the upper tail of the standard normal.
func normalTail(x float64) float64 { return math.Erfc(x/math.Sqrt2) / 2 }

// logPhi is ln Φ(x). Far in the lower tail, where Erfc underflows, it uses
// the asymptotic series Φ(x) ≈ φ(x)/(−x)·(1 − 1/x² + 3/x⁴ − 15/x⁶)
// (relative error < 1e-9 below x = −30).
func logPhi(x float64) float64 {
	if x > -30 {
		return math.Log(math.Erfc(-x/math.Sqrt2) / 2)
	}
	x2 := x * x
	return -x2/2 - math.Log(-x) - math.Log(2*math.Pi)/2 + math.Log1p(-1/x2+3/(x2*x2)-15/(x2*x2*x2))
}

// msDuration converts milliseconds to a Duration, saturating: a value past
// what a Duration holds (about 292 years), +Inf included, is the largest
// Duration, and a negative or NaN one is 0. No knob arithmetic can
// overflow into a negative (instant) time.
func msDuration(ms float64) time.Duration { return nsDuration(ms * float64(time.Millisecond)) }

// nsDuration is msDuration for nanoseconds.
func nsDuration(ns float64) time.Duration {
	switch {
	case math.IsNaN(ns) || ns <= 0:
		return 0
	case ns >= math.MaxInt64: // float64(MaxInt64) rounds up to 2⁶³
		return math.MaxInt64
	}
	return time.Duration(ns)
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
	return msDuration(ms)
}

func uniform(r *rand.Rand) float64 {
	if r != nil {
		return r.Float64()
	}
	return rand.Float64()
}
