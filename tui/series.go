package tui

// point is one measured value of a series at one Sample (t is the
// Sample's Elapsed seconds). ok is false when the Sample could not measure
// it (a stale scrape): the chart leaves a gap.
type point struct {
	t  float64
	v  float64
	ok bool
}

// ring is a fixed-capacity history of points, oldest first when read.
// The zero value is not usable; use newRing.
type ring struct {
	buf   []point
	start int // index of the oldest point
	n     int // number of points held, ≤ len(buf)
}

func newRing(capacity int) *ring {
	if capacity < 1 {
		capacity = 1
	}
	return &ring{buf: make([]point, capacity)}
}

// push appends p, dropping the oldest point when full.
func (r *ring) push(p point) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = p
		r.n++
		return
	}
	r.buf[r.start] = p
	r.start = (r.start + 1) % len(r.buf)
}

// len reports how many points are held.
func (r *ring) len() int { return r.n }

// at returns the i-th point, 0 being the oldest held.
func (r *ring) at(i int) point { return r.buf[(r.start+i)%len(r.buf)] }

// last returns the newest point, or a zero (not ok) point when empty.
func (r *ring) last() point {
	if r.n == 0 {
		return point{}
	}
	return r.at(r.n - 1)
}
