package admit

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
)

// simQueue is the simulation's event queue: it pops events in (at, seq)
// order, the order container/heap gave with simEvents' Less (seq is
// unique, so the order is total and any correct queue pops the same
// sequence). Most events are an arrival, a deadline, a queue timeout or a
// 429's return, each pushed at now plus a delay that rarely shrinks, so
// their times mostly come in order: each of those kinds has a FIFO lane,
// which takes an event whose time is no earlier than its last one's (a
// lane is sorted, its head is its least), and the rest go to a binary
// heap. A request's deadline was pushed into a heap thousands deep for
// every request, most of them stale by the time they pop; a lane pushes
// and pops it in O(1), and the heap keeps the few hundred services under
// way.
// Typed, with no interface calls or boxing (container/heap's Push(any)
// allocated an event each time): the simulation's largest cost under
// -race was the heap's memory traffic.
type simQueue struct {
	heap  []simEvent
	lanes [simLanes]simLane
	n     int
}

// simLanes: the lanes' count; laneOf maps an event kind to its lane.
const simLanes = 4

func laneOf(kind uint8) int {
	switch kind {
	case evDeadline:
		return 0
	case evQueueTimeout:
		return 1
	case evRefused:
		return 2
	case evArrive:
		return 3
	}
	return -1
}

// simLane is a FIFO of events in (at, seq) order: q[head:] is pending.
type simLane struct {
	q    []simEvent
	head int
}

// evBefore is simEvents' Less: earlier, or as early and pushed first.
func evBefore(a, b *simEvent) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *simQueue) len() int { return q.n }

// push adds e; its seq must be above every seq pushed before.
func (q *simQueue) push(e simEvent) {
	q.n++
	if k := laneOf(e.kind); k >= 0 {
		l := &q.lanes[k]
		if l.head == len(l.q) {
			l.q, l.head = l.q[:0], 0
		}
		// A later seq at the same time sorts after: in order too.
		if len(l.q) == l.head || l.q[len(l.q)-1].at <= e.at {
			if l.head > 0 && len(l.q) == cap(l.q) && 2*l.head >= len(l.q) {
				// Full, and half of it popped: slide down rather than grow.
				n := copy(l.q, l.q[l.head:])
				l.q, l.head = l.q[:n], 0
			}
			l.q = append(l.q, e)
			return
		}
	}
	h := append(q.heap, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !evBefore(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
	q.heap = h
}

// pop removes and returns the least event; the queue must not be empty.
func (q *simQueue) pop() simEvent {
	q.n--
	// The least of the heap's top and the lanes' heads.
	var best *simEvent
	from := -1
	if len(q.heap) > 0 {
		best = &q.heap[0]
	}
	for k := range q.lanes {
		l := &q.lanes[k]
		if l.head < len(l.q) && (best == nil || evBefore(&l.q[l.head], best)) {
			best, from = &l.q[l.head], k
		}
	}
	if from >= 0 {
		e := *best
		q.lanes[from].head++
		return e
	}
	h := q.heap
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	if n := len(h); n > 0 {
		i := 0
		for {
			c := 2*i + 1
			if c >= n {
				break
			}
			if r := c + 1; r < n && evBefore(&h[r], &h[c]) {
				c = r
			}
			if !evBefore(&h[c], &last) {
				break
			}
			h[i] = h[c]
			i = c
		}
		h[i] = last
	}
	q.heap = h
	return top
}

// nthSmallest returns the element a sort of xs would put at index k
// (0 ≤ k < len(xs)), reordering xs: a quickselect, linear on average where
// sorting a run's hundred thousand latencies for one percentile was not.
func nthSmallest(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		// Median of three as the pivot.
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		p := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for xs[j] > p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		// xs[lo..j] ≤ p ≤ xs[i..hi], and what lies between equals p.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// TestSimQueueOrder: the queue pops what container/heap popped with
// simEvents' Less, (at, seq) order, over pushes and pops interleaved as the
// simulation does them (a push's seq above all before it; times from now
// on, in order for the lanes' kinds but not always, many equal).
func TestSimQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var q simQueue
		var ref simRefHeap
		now, seq := 0.0, uint64(0)
		delays := [...]float64{0, 0.005, 0.5, 1, 5, 20} // few values: many ties
		for i := range 20000 {
			if q.len() != ref.Len() {
				t.Fatalf("round %d step %d: len %d, want %d", round, i, q.len(), ref.Len())
			}
			if q.len() > 0 && rng.IntN(3) == 0 {
				got, want := q.pop(), heap.Pop(&ref).(simEvent)
				if got != want {
					t.Fatalf("round %d step %d: popped %+v, want %+v", round, i, got, want)
				}
				now = got.at
				continue
			}
			seq++
			e := simEvent{kind: uint8(rng.IntN(evGuard + 1)), id: int32(i), seq: seq}
			e.at = now + delays[rng.IntN(len(delays))]*float64(1+rng.IntN(3)) // ×1–3: a phase's multiplier
			q.push(e)
			heap.Push(&ref, e)
		}
		for q.len() > 0 {
			if got, want := q.pop(), heap.Pop(&ref).(simEvent); got != want {
				t.Fatalf("round %d, draining: popped %+v, want %+v", round, got, want)
			}
		}
	}
}

// simRefHeap is the event heap the simulation had: container/heap with
// (at, seq) order.
type simRefHeap []simEvent

func (e simRefHeap) Len() int           { return len(e) }
func (e simRefHeap) Less(i, j int) bool { return evBefore(&e[i], &e[j]) }
func (e simRefHeap) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *simRefHeap) Push(x any)        { *e = append(*e, x.(simEvent)) }
func (e *simRefHeap) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// TestNthSmallest: nthSmallest returns what a sort puts at k, ties and
// all.
func TestNthSmallest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 2000 {
		n := 1 + rng.IntN(300)
		xs := make([]float64, n)
		for i := range xs {
			switch round % 3 {
			case 0:
				xs[i] = rng.Float64()
			case 1:
				xs[i] = float64(rng.IntN(5)) // many equal
			default:
				xs[i] = float64(i) // sorted
			}
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		k := rng.IntN(n)
		if got := nthSmallest(slices.Clone(xs), k); got != sorted[k] {
			t.Fatalf("round %d: element %d of %v: %v, want %v", round, k, xs, got, sorted[k])
		}
	}
}
