package upstream

import "time"

// timeRing is a rolling window of len(buckets) equal time buckets; the
// newest is buckets[cur]. Rolling to a later time clears the buckets that
// fell out of the window. It is not safe for concurrent use: its owner
// guards it.
type timeRing[T any] struct {
	width   time.Duration
	buckets []T
	cur     int
	start   time.Time // start of buckets[cur]
}

// newTimeRing returns a ring of n buckets spanning span, starting at now.
func newTimeRing[T any](n int, span time.Duration, now time.Time) timeRing[T] {
	w := span / time.Duration(n)
	if w <= 0 {
		w = 1
	}
	return timeRing[T]{width: w, buckets: make([]T, n), start: now}
}

// roll advances the ring to now, clearing expired buckets.
func (r *timeRing[T]) roll(now time.Time) {
	steps := int64(now.Sub(r.start) / r.width)
	if steps <= 0 {
		return
	}
	if steps >= int64(len(r.buckets)) {
		r.reset(now)
		return
	}
	var zero T
	for range steps {
		r.cur = (r.cur + 1) % len(r.buckets)
		r.buckets[r.cur] = zero
	}
	r.start = r.start.Add(time.Duration(steps) * r.width)
}

// reset clears every bucket; the newest starts at now.
func (r *timeRing[T]) reset(now time.Time) {
	clear(r.buckets)
	r.start = now
}

// at rolls to now and returns the newest bucket.
func (r *timeRing[T]) at(now time.Time) *T {
	r.roll(now)
	return &r.buckets[r.cur]
}
