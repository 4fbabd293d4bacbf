package runfiles

import "math"

// capacityAndRatio is the time-weighted mean capacity over ds (their dt,
// capacity and offered) and the goodput ratio of ok requests: ok over the
// usable capacity, Σ over each second of the load's clock of
// min(offered, capacity × dt) (per tick, Poisson noise in the offered
// count would bias the minimum down). Each is 0 when there is nothing to
// divide by. A killed run's summary, rebuilt from its samples, uses it
// too, with the same seconds (see tickSecond).
//
// The seconds are fixed, [k, k+1) of Sample.Elapsed, a tick counted in
// the one that holds its window's middle. They used to be runs of ticks
// closed once their dt added up to 1 s: four 250 ms windows that came out
// a few µs short (0.9997 s) made a bucket of five ticks, so the edges
// hung on timer jitter and differed between the generator's windows and
// the samples' elapsed times (rounded to 1 ms); a 1.25 s bucket also
// counts more as usable than its seconds would (a minimum of sums is
// never below the sum of the minima), and one pooled the load's last
// 0.75 s of offer with 0.5 s of the drain's idle capacity. 02-semaphore
// read usable 712.3 in its summary against 687.6 rebuilt, its goodput
// ratio 3.6 % apart; in fixed seconds both read 687.6.
func capacityAndRatio(ds []digest, ok float64) (capacity, ratio float64) {
	var capSum, capT, usable float64
	var bOff, bCap float64
	bSec, open := 0.0, false
	for _, d := range ds {
		if d.dt <= 0 {
			continue
		}
		if open && d.second != bSec {
			usable += math.Min(bOff, bCap)
			bOff, bCap = 0, 0
		}
		bSec, open = d.second, true
		capSum += d.capacity * d.dt
		capT += d.dt
		bOff += d.offered
		bCap += d.capacity * d.dt
	}
	usable += math.Min(bOff, bCap)
	if capT > 0 {
		capacity = round(capSum/capT, 3)
	}
	if usable > 0 {
		ratio = round(ok/usable, 6)
	}
	return capacity, ratio
}

// tickSecond is the goodput ratio's bucket of a tick: the second of the
// load's clock ([k, k+1) of Sample.Elapsed, k returned) that holds the
// middle of the tick's window (tickMid). The Aggregator and a killed run's
// rebuild call it with the same recorded values, so they bucket every tick
// alike; the middle keeps a tick whose end jitters around a whole second in
// one bucket.
func tickSecond(prev float64, havePrev bool, elapsed, dt float64) float64 {
	return math.Floor(tickMid(prev, havePrev, elapsed, dt))
}

// tickMid is the middle of a tick's window on the load's clock
// (Sample.Elapsed). The window runs from the previous sample's elapsed
// time prev (when havePrev) to this one's, elapsed; for a first sample,
// from dt before it.
func tickMid(prev float64, havePrev bool, elapsed, dt float64) float64 {
	from := elapsed - dt
	if havePrev {
		from = prev
	}
	return (from + elapsed) / 2
}
