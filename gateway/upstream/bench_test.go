package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchWorkers is the number of concurrent callers: well above Go's default
// of 2 idle connections per host, as behind a busy gateway.
const benchWorkers = 16

func benchNodes(b *testing.B) []string {
	b.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"decision":"APPROVE","score":0.87}`)
	})
	var urls []string
	for range 2 {
		s := httptest.NewServer(h)
		b.Cleanup(s.Close)
		urls = append(urls, s.URL)
	}
	return urls
}

// benchPool builds a pool over nodes; defaultTransport swaps in a clone of
// http.DefaultTransport (MaxIdleConnsPerHost 0 → 2). The counter counts
// TCP dials.
func benchPool(b *testing.B, nodes []string, defaultTransport bool) (*Pool, *atomic.Int64) {
	b.Helper()
	cfg := Config{Nodes: nodes}
	tr := NewTransport(cfg)
	if defaultTransport {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	dial := tr.DialContext
	dials := new(atomic.Int64)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	p, err := New(cfg, WithTransport(tr))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p, dials
}

var benchBody = []byte(`{"features":[1,2,3]}`)

// drive sends n P2 requests through p from benchWorkers goroutines and
// returns the elapsed time.
func drive(b *testing.B, p *Pool, n int) time.Duration {
	return driveAs(b, p, n, LowestPriority)
}

// driveAs is drive with calls of the given priority.
func driveAs(b *testing.B, p *Pool, n, priority int) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range benchWorkers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				resp, err := p.Send(context.Background(), Call{Method: http.MethodPost, Path: "/v1/predict", Body: benchBody, Priority: priority, Class: "predict"})
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkPoolDo reports req/s through the pool with its tuned transport and
// with Go's default transport.
func BenchmarkPoolDo(b *testing.B) {
	for _, tc := range []struct {
		name string
		def  bool
	}{{"tuned", false}, {"default_transport", true}} {
		b.Run(tc.name, func(b *testing.B) {
			p, dials := benchPool(b, benchNodes(b), tc.def)
			drive(b, p, 200) // warm up connections
			d0 := dials.Load()
			b.ReportAllocs()
			b.ResetTimer()
			el := drive(b, p, b.N)
			b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
			b.ReportMetric(float64(dials.Load()-d0)/float64(b.N), "dials/op")
		})
	}
}

// BenchmarkPoolDoTransportRatio pushes the same b.N requests through both
// pools in one run and reports the throughput ratio tuned/default and each
// pool's new TCP dials per call (after the warm-up: Go's default keeps 2
// idle connections per host, so some of 16 callers' connections are closed
// and dialled again). The two pools take turns in ten interleaved rounds,
// so noise from a shared machine falls on both alike.
func BenchmarkPoolDoTransportRatio(b *testing.B) {
	nodes := benchNodes(b)
	tuned, tunedDials := benchPool(b, nodes, false)
	def, defDials := benchPool(b, nodes, true)
	drive(b, tuned, 200)
	drive(b, def, 200)
	t0, d0 := tunedDials.Load(), defDials.Load()
	b.ResetTimer()
	const rounds = 10
	var et, ed time.Duration
	for r := range rounds {
		n := b.N / rounds
		if r == 0 {
			n += b.N % rounds
		}
		if r%2 == 0 {
			et += drive(b, tuned, n)
			ed += drive(b, def, n)
		} else {
			ed += drive(b, def, n)
			et += drive(b, tuned, n)
		}
	}
	b.ReportMetric(float64(b.N)/et.Seconds(), "tuned_req/s")
	b.ReportMetric(float64(b.N)/ed.Seconds(), "default_req/s")
	b.ReportMetric(ed.Seconds()/et.Seconds(), "tuned/default")
	b.ReportMetric(float64(tunedDials.Load()-t0)/float64(b.N), "tuned_dials/op")
	b.ReportMetric(float64(defDials.Load()-d0)/float64(b.N), "default_dials/op")
}

// BenchmarkPoolSendP0VsP2 pushes P0 calls (attempt timeout and hedge timer
// armed on every call, hedges sent when an answer is slower than the p95)
// and P2 calls (attempt timeout only) through one pool in ten interleaved
// rounds and reports the throughput ratio: what P0's protection costs on a
// fast loopback node.
func BenchmarkPoolSendP0VsP2(b *testing.B) {
	p, _ := benchPool(b, benchNodes(b), false)
	driveAs(b, p, 500, HighestPriority) // warm up connections and latency windows
	c0 := p.Counters()
	b.ResetTimer()
	const rounds = 10
	var e0, e2 time.Duration
	for r := range rounds {
		n := b.N / rounds
		if r == 0 {
			n += b.N % rounds
		}
		if r%2 == 0 {
			e0 += driveAs(b, p, n, HighestPriority)
			e2 += driveAs(b, p, n, LowestPriority)
		} else {
			e2 += driveAs(b, p, n, LowestPriority)
			e0 += driveAs(b, p, n, HighestPriority)
		}
	}
	c := p.Counters()
	b.ReportMetric(float64(b.N)/e0.Seconds(), "p0_req/s")
	b.ReportMetric(float64(b.N)/e2.Seconds(), "p2_req/s")
	b.ReportMetric(e2.Seconds()/e0.Seconds(), "p0/p2")
	b.ReportMetric(float64(c.HedgesSent-c0.HedgesSent)/float64(b.N), "hedges/p0_call")
}
