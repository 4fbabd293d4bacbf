package ratelimit

import (
	"context"
	"testing"
	"time"
	"os"
	"runtime/pprof"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func TestMiniScratch(t *testing.T) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	s := NewRedis(c)
	ctx := context.Background()
	sc := redis.NewScript("return 1")
	f, _ := os.Create("/tmp/mr/cpu.prof")
	pprof.StartCPUProfile(f)
	n := 1000
	start := time.Now()
	for i := 0; i < n; i++ { sc.Run(ctx, c, []string{"x"}) }
	t.Logf("return1 %v/op", time.Since(start)/time.Duration(n))
	start = time.Now()
	for i := 0; i < n; i++ { c.Ping(ctx) }
	t.Logf("ping %v/op", time.Since(start)/time.Duration(n))
	start = time.Now()
	for i := 0; i < n; i++ {
		s.Allow(ctx, "k3", Rule{Algorithm: TokenBucket, ReplenishRate: 1e12, Burst: 1 << 40}, 1, time.Now())
	}
	t.Logf("tb %v/op", time.Since(start)/time.Duration(n))
	start = time.Now()
	for i := 0; i < n; i++ {
		s.Allow(ctx, "k2", Rule{Algorithm: SlidingWindow, Limit: 1 << 40, Window: 100 * time.Millisecond}, 1, time.Now())
	}
	t.Logf("sw %v/op", time.Since(start)/time.Duration(n))
	pprof.StopCPUProfile()
}
