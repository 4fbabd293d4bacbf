package gateway

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/internal/wire/wiretest"
)

// TestMetricsContract: the gateway's /metrics, after a few requests,
// follows Prometheus conventions (promlint finds nothing) and serves
// exactly wire's catalogue, with its types and labels.
func TestMetricsContract(t *testing.T) {
	m := newFakeModel(t, 4, 0)
	s := startServer(t, testConfig(m.addr()))
	base := "http://" + s.Addr()
	for _, r := range []struct{ method, path, body string }{
		{"POST", wire.PathPredict, predictBody}, {"POST", wire.PathChat, chatBody}, {"GET", wire.PathStandard + "ping", ""},
	} {
		if a := call(t, r.method, base+r.path, "k0", r.body); a.err != nil || a.status != 200 {
			t.Fatalf("%s %s: %v", r.method, r.path, a)
		}
	}
	wiretest.CheckServer(t, base, wire.GatewayMetrics(), wire.GatewayRedisMetrics()...)
}

// TestHeapGaugeIsCurrent: levee_heap_bytes is the heap as it is at the
// scrape, not the live heap the last GC marked. Between GCs a gateway's
// heap can double (GOGC=100); a gauge frozen at the last GC's figure hid a
// heap growing to the pod's memory limit. GC is off while the test holds
// 64 MB, so only a measurement taken now can see it.
func TestHeapGaugeIsCurrent(t *testing.T) {
	m := newFakeModel(t, 4, 0)
	s := startServer(t, testConfig(m.addr()))
	heap := func() float64 {
		t.Helper()
		return counterSum(scrape(t, s), wire.MetricHeap, nil)
	}
	runtime.GC() // a GC has marked a live heap: the figure a frozen gauge would keep
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := heap()
	hold := make([]byte, 64<<20)
	for i := range hold {
		hold[i] = 1
	}
	after := heap()
	t.Logf("%s %.1f MB, after allocating 64 MB (GC off) %.1f MB", wire.MetricHeap, before/(1<<20), after/(1<<20))
	if after-before < 60<<20 {
		t.Errorf("%s grew %.1f MB while the heap grew 64 MB: it is not measured at the scrape", wire.MetricHeap, (after-before)/(1<<20))
	}
	runtime.KeepAlive(hold)
}

// BenchmarkCountLabeled: counting a fallback, an agent task and a
// sub-call on the kept children (with) beside a WithLabelValues lookup,
// which the request path did before.
func BenchmarkCountLabeled(b *testing.B) {
	g, _ := admitGateway(b)
	m := g.m
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.fallbacks.with(routeChat.String(), wire.FallbackUpstream).Inc()
			m.tasks.with(wire.AgentTaskResults()[0], wire.Levels()[1]).Inc()
			m.subcalls.with(wire.SubcallOK).Inc()
		}
	})
	b.Run("WithLabelValues", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.fallbacks.vec.WithLabelValues(routeChat.String(), wire.FallbackUpstream).Inc()
			m.tasks.vec.WithLabelValues(wire.AgentTaskResults()[0], wire.Levels()[1]).Inc()
			m.subcalls.vec.WithLabelValues(wire.SubcallOK).Inc()
		}
	})
}

// TestQueueWaitSamplesEveryPass: levee_queue_wait_seconds has a sample
// for every request that reaches the bulkhead (docs/CONTRACTS.md), not
// only for those that queued: 0 s for a place granted at once, and one
// for a refusal at a full queue, so its count is the class's bulkhead
// passes and its quantiles are over all of them.
func TestQueueWaitSamplesEveryPass(t *testing.T) {
	fm := newFakeModel(t, 8, 0)
	fm.hold = make(chan struct{})
	cfg := testConfig(fm.addr())
	cfg.Classes.AI = staticClass(1, 1, 4, 0, time.Second) // one place, no queue
	cfg.Defenses.Guard = false                            // a full class would raise the level
	s := startServer(t, cfg)
	base := "http://" + s.Addr()
	wait := func() (count uint64, sum float64) {
		f := scrape(t, s)[wire.MetricQueueWait]
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == wire.LabelClass && l.GetValue() == "ai" {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
		t.Fatalf("no %s{class=\"ai\"}", wire.MetricQueueWait)
		return 0, 0
	}
	done := make(chan answer, 1) // the first call holds the one place
	go func() { done <- call(t, "POST", base+wire.PathPredict, "k1", predictBody) }()
	eventually(t, 10*time.Second, func() bool { return fm.inflight.Load() == 1 }, "the call to hold the place")
	if a := call(t, "POST", base+wire.PathPredict, "k1", predictBody); a.outcome != "shed_queue_full" {
		t.Fatalf("with the place held and no queue: %v, want shed_queue_full", a)
	}
	close(fm.hold) // from now on the model answers at once
	if a := <-done; a.status != 200 {
		t.Fatalf("held call: %v", a)
	}
	n0, sum0 := wait()
	if n0 != 2 {
		t.Fatalf("%d samples after a grant and a refusal, want 2", n0)
	}
	for range 3 {
		if a := call(t, "POST", base+wire.PathPredict, "k1", predictBody); a.status != 200 {
			t.Fatalf("%v", a)
		}
	}
	if n, sum := wait(); n != n0+3 || sum != sum0 {
		t.Fatalf("3 requests granted at once: samples %d → %d, sum %v → %v s; want 3 more samples of 0 s", n0, n, sum0, sum)
	}
}
