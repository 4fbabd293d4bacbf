package upstream

import "sync/atomic"

// Balancer chooses a node for one call. loads[i] is the number of
// outstanding requests on the i-th eligible node (never empty). Pick returns
// an index into loads. Implementations must be safe for concurrent use.
type Balancer interface {
	Pick(loads []int64) int
}

// BalancerFunc adapts a function to Balancer.
type BalancerFunc func(loads []int64) int

// Pick calls f.
func (f BalancerFunc) Pick(loads []int64) int { return f(loads) }

// LeastOutstanding picks the node with the fewest outstanding requests.
// Ties are broken round-robin, so idle nodes share light load evenly.
// The zero value is ready to use.
type LeastOutstanding struct {
	next atomic.Uint64 // rotating start index for tie-breaking
}

// Pick returns the index of a least-loaded entry of loads, -1 when empty.
func (l *LeastOutstanding) Pick(loads []int64) int {
	n := len(loads)
	if n == 0 {
		return -1
	}
	start := int(l.next.Add(1) % uint64(n))
	best := start
	for k := 1; k < n; k++ {
		i := (start + k) % n
		if loads[i] < loads[best] {
			best = i
		}
	}
	return best
}
