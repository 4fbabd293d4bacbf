package gateway

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// nodeSignals tracks the model nodes' backpressure signal (seed 004: a
// worker past its heap, CPU or queue watermark tells the gateway so). A
// node's signal is the word of its latest answer: an answer carrying
// wire.HeaderBackpressure starts it, one without ends it, and it expires
// ttl after the answer that carried it (a node that stops answering says
// nothing more; health checks deal with that). Safe for concurrent use;
// observe does not allocate once a node has been seen.
type nodeSignals struct {
	ttl   time.Duration
	nodes int // configured nodes: the share's denominator

	mu    sync.Mutex
	until map[string]time.Time // guarded by mu: node host → signal valid until (zero: not signalling)
}

func newNodeSignals(nodes int, ttl time.Duration) *nodeSignals {
	return &nodeSignals{ttl: ttl, nodes: max(nodes, 1), until: make(map[string]time.Time, nodes)}
}

// observe records a node's answer at now.
func (s *nodeSignals) observe(resp *http.Response, now time.Time) {
	if resp == nil || resp.Request == nil || resp.Request.URL == nil {
		return
	}
	host := resp.Request.URL.Host
	on := resp.Header.Get(wire.HeaderBackpressure) != ""
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.until[host]; !seen && len(s.until) >= 4*s.nodes {
		return // the pool's nodes are known: a flood of strange hosts is not
	}
	if on {
		s.until[host] = now.Add(s.ttl)
	} else {
		s.until[host] = time.Time{}
	}
}

// share is the share of the configured nodes signalling at now, 0..1.
func (s *nodeSignals) share(now time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, u := range s.until {
		if now.Before(u) {
			n++
		}
	}
	return min(float64(n)/float64(s.nodes), 1)
}

// signalling reports whether node host's signal counts at now.
func (s *nodeSignals) signalling(host string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return now.Before(s.until[host])
}

// hostOf is the host:port of a node's base URL ("http://127.0.0.1:9001").
func hostOf(base string) string {
	for _, p := range []string{"http://", "https://"} {
		if h, ok := strings.CutPrefix(base, p); ok {
			return h
		}
	}
	return base
}
