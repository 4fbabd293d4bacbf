package fakemodel

import (
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// markBackpressure sets wire.HeaderBackpressure on w when the node is past
// one of its backpressure watermarks (or told to signal), naming the
// reasons; otherwise it removes the header. Call it before the answer's
// headers are written.
func (n *Node) markBackpressure(w http.ResponseWriter) {
	if r := n.backpressureReasons(); r != "" {
		w.Header().Set(wire.HeaderBackpressure, r)
		return
	}
	w.Header().Del(wire.HeaderBackpressure)
}

// backpressureReasons returns the comma-separated reasons the node is
// signalling now, "" when none.
func (n *Node) backpressureReasons() string {
	bp := n.Knobs().Backpressure
	if bp == (Backpressure{}) {
		return ""
	}
	var reasons []string
	if bp.Force {
		reasons = append(reasons, wire.BackpressureForce)
	}
	if bp.Queue > 0 {
		if _, queued, _ := n.slots.state(); queued >= bp.Queue {
			reasons = append(reasons, wire.BackpressureQueue)
		}
	}
	if bp.HeapMB > 0 || bp.CPU > 0 {
		heap, cpu := procUsage.read(time.Now())
		if bp.HeapMB > 0 && float64(heap) >= bp.HeapMB*(1<<20) {
			reasons = append(reasons, wire.BackpressureHeap)
		}
		if bp.CPU > 0 && cpu >= bp.CPU {
			reasons = append(reasons, wire.BackpressureCPU)
		}
	}
	return strings.Join(reasons, ",")
}

// usageEvery is how often the process's heap and CPU are re-read: often
// enough to follow a GC-pressure fault, rarely enough to cost nothing.
const usageEvery = 250 * time.Millisecond

// procUsage is the process's heap and CPU share; the nodes of one process
// share it (and what it measures).
var procUsage usageSampler

// usageSampler caches the live heap and the CPU share of the last interval.
type usageSampler struct {
	mu      sync.Mutex
	at      time.Time     // guarded by mu: last read
	cpuTime time.Duration // guarded by mu: process CPU time at at
	heap    uint64        // guarded by mu
	cpu     float64       // guarded by mu: share of GOMAXPROCS over the last interval
}

var heapSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// read returns the live heap and the CPU share, re-measured when the
// cached values are older than usageEvery.
func (u *usageSampler) read(now time.Time) (heap uint64, cpu float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if now.Sub(u.at) < usageEvery {
		return u.heap, u.cpu
	}
	s := []metrics.Sample{heapSample[0]}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		u.heap = s[0].Value.Uint64()
	}
	if t, ok := processCPUTime(); ok {
		if !u.at.IsZero() {
			wall := now.Sub(u.at)
			u.cpu = float64(t-u.cpuTime) / float64(wall) / float64(runtime.GOMAXPROCS(0))
		}
		u.cpuTime = t
	}
	u.at = now
	return u.heap, u.cpu
}
