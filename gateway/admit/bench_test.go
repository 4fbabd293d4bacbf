package admit

import (
	"context"
	"testing"
	"time"
)

func BenchmarkBulkheadAcquireRelease(b *testing.B) {
	for _, algo := range []string{AlgoStatic, AlgoGradient} {
		b.Run(algo, func(b *testing.B) {
			bh, err := NewBulkhead("ai", BulkheadConfig{
				Limiter:      LimiterConfig{Algorithm: algo, Limit: 1 << 20},
				QueueSize:    64,
				QueueTimeout: time.Second,
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p, err := bh.Acquire(ctx, P1)
				if err != nil {
					b.Fatal(err)
				}
				p.Release(Sample{RTT: time.Millisecond})
			}
		})
	}
}

// BenchmarkBulkheadParallel contends on one bulkhead from all Ps, with a
// limit high enough that nobody waits.
func BenchmarkBulkheadParallel(b *testing.B) {
	bh, _ := NewBulkhead("ai", BulkheadConfig{Limiter: LimiterConfig{Algorithm: AlgoStatic, Limit: 1 << 20}})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			p, _ := bh.Acquire(ctx, P0)
			p.Release(Sample{RTT: time.Millisecond})
		}
	})
}

func BenchmarkGuardAdmit(b *testing.B) {
	g := NewGuard(Thresholds{Yellow: Signals{LagMs: 50}})
	b.ReportAllocs()
	n := 0
	for i := 0; i < b.N; i++ {
		if g.Admit(Priority(i % NumPriorities)) {
			n++
		}
	}
	if n != b.N {
		b.Fatal("green guard shed")
	}
}

func BenchmarkBudget(b *testing.B) {
	bu := NewBudget(DefaultBudgetConfig(1 << 40))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if bu.Reserve(Priority(i%NumPriorities), 512) == nil {
			bu.Release(512)
		}
	}
}
