// Package allocs counts the heap allocations of a function for the
// zero-allocation tests. testing.AllocsPerRun returns the allocations
// divided by the runs in integer arithmetic, so a path that allocates once
// every second call (or once a window, or when a ring grows) reads 0 and
// its test passes; Total returns the count itself.
package allocs

import (
	"runtime"
)

// warmUp is the calls before the count. The runtime fills a call site's
// type-assertion and type-switch cache (one allocation) on a random one in
// about 1,024 of its calls, so a single warm-up call leaves that
// allocation to the counted runs about half the time; after 20,000 the
// chance is e^-19.5 a site.
const warmUp = 20000

// Total calls f warmUp times, then runs times, and returns the heap
// allocations (runtime.MemStats.Mallocs) made in those runs, with
// GOMAXPROCS at 1 as testing.AllocsPerRun does. The count is the whole
// process's: a goroutine that allocates while f runs is counted too, so
// call it where nothing else runs (a test that is not parallel, with no
// timers or servers of its own still busy).
func Total(runs int, f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for range warmUp {
		f()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}
