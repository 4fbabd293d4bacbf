package fakemodel

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSaturatedThroughput checks capacity = nodes × slots / mean: N=2
// nodes of C=8 slots, fixed 50 ms service (expected 320 req/s), driven by
// 5×C×N closed-loop callers for 2 s after a short warm-up. It reports the
// measured and expected req/s and their ratio (the acceptance wants ratio
// within 0.90–1.10).
func BenchmarkSaturatedThroughput(b *testing.B) {
	const nodes, slots, serviceMs = 2, 8, 50
	const callers = 5 * slots * nodes
	const window, warm = 2 * time.Second, 200 * time.Millisecond
	lns, err := Listen("127.0.0.1", 0, nodes)
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewServer(lns, WithKnobs(fixedKnobs(serviceMs, slots, OverflowQueue)), WithAdminToken(testToken))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, 5*time.Second) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	var urls []string
	for _, n := range s.Nodes() {
		urls = append(urls, "http://"+n.Addr()+"/v1/chat/completions")
	}
	expected := float64(nodes*slots) / (float64(serviceMs) / 1000)
	b.ResetTimer()
	var measured float64
	for range b.N {
		var ok, failed atomic.Int64
		var counting atomic.Bool
		stop := time.Now().Add(warm + window)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				url := urls[i%len(urls)] // a fixed share of callers per node, like a balanced pool
				for time.Now().Before(stop) {
					code, _, err := post(context.Background(), url, chatBody)
					if !counting.Load() {
						continue
					}
					if err != nil || code != 200 {
						failed.Add(1)
						continue
					}
					ok.Add(1)
				}
			}()
		}
		time.Sleep(warm)
		counting.Store(true)
		t0 := time.Now()
		time.Sleep(window)
		counting.Store(false)
		el := time.Since(t0)
		wg.Wait()
		if failed.Load() > 0 {
			b.Fatalf("%d requests failed", failed.Load())
		}
		measured = float64(ok.Load()) / el.Seconds()
	}
	b.StopTimer()
	b.ReportMetric(measured, "req/s")
	b.ReportMetric(expected, "expected_req/s")
	b.ReportMetric(measured/expected, "ratio")
}
