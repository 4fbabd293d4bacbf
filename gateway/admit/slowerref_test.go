package admit

import (
	"math/rand/v2"
	"testing"
)

// TestDeeperProbeOverturnsSlower: an urgent probe of 28 calls reads the
// backend 1.45× slower (its spread too) and becomes the baseline. The
// next probe below runs deeper: when it reads the old level, latency fell
// with the concurrency, so the first had met a queue and the baseline
// returns to the old level (merged, the two read half-way when they sit
// within three standard errors: lesson 04, traced, held the limit at the
// band's top edge for 20 s); when it reads slow too, the backend is
// slower and the baseline stays. (Measured over 200 seeds, 126 judged
// slower: 1.055 and 1.027 × the level; merged as before, the queue's case
// read 1.142.)
func TestDeeperProbeOverturnsSlower(t *testing.T) {
	const plain, factor, calls, seeds = 0.15, 1.45, 28, 200
	truth := kindsTruth(0, plain)
	cases := []struct {
		name   string
		second float64 // the deeper probe's latency factor
	}{
		{"the slower reading was a queue", 1},
		{"the backend is slower", factor},
	}
	for _, c := range cases {
		var sum, worst float64
		judged := 0
		for seed := range uint64(seeds) {
			a := kindsStartUp(t, 64, 0, plain, seed+1)
			rng := rand.New(rand.NewPCG(seed+1, 9))
			slow := plainCohort(1000, calls, plain, rng)
			for i := range slow.n {
				slow.lat[i] *= factor
			}
			slow.off = a.kindOff
			// The window that cut read the same slower spread.
			a.last = windowStats{n: 64, stat: factor * a.base, sw: factor * a.baseSW, inflight: 40, x: 40 / (factor * a.base)}
			before := a.base
			a.probe = prober{limit: 35, urgent: true}
			a.endProbe(slow)
			if a.base < 1.2*before {
				continue // not judged slower: nothing to overturn
			}
			judged++
			deep := plainCohort(2000, calls, plain, rng)
			for i := range deep.n {
				deep.lat[i] *= c.second
			}
			deep.off = a.kindOff
			a.probe = prober{limit: 31}
			a.endProbe(deep)
			r := a.base / (c.second * truth)
			sum += r
			worst = max(worst, r)
		}
		if judged < seeds/4 {
			t.Fatalf("%s: only %d of %d first probes were judged slower: the test measures nothing", c.name, judged, seeds)
		}
		mean := sum / float64(judged)
		t.Logf("%s: %d judged slower; the baseline after the deeper probe %.3f × its level on average, at most %.3f", c.name, judged, mean, worst)
		if mean < 0.95 || mean > 1.08 {
			t.Errorf("%s: the baseline after the deeper probe is %.3f × its level on average (at most %.3f), want 0.95–1.08", c.name, mean, worst)
		}
	}
}
