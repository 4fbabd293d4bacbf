package ratelimit

import (
	"context"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The local store's decisions beside x/time/rate's Allow, in one run, for
// the ratio. Each benchmark decides for one warm key with an advancing
// clock, so decisions mix admissions and denials as in use.

func benchLocal(b *testing.B, r Rule) {
	l := NewLocal()
	ctx := context.Background()
	now := t0
	for i := 0; i < 10000; i++ { // warm: the key and its ring exist
		now = now.Add(100 * time.Microsecond)
		l.Allow(ctx, "tenant-a:/v1/chat", r, 1, now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(100 * time.Microsecond)
		if _, err := l.Allow(ctx, "tenant-a:/v1/chat", r, 1, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocalAllow(b *testing.B) {
	b.Run("sliding_window", func(b *testing.B) {
		benchLocal(b, Rule{Algorithm: SlidingWindow, Limit: 1000, Window: time.Second})
	})
	b.Run("token_bucket", func(b *testing.B) {
		benchLocal(b, Rule{Algorithm: TokenBucket, ReplenishRate: 1000, Burst: 100})
	})
}

func BenchmarkTimeRateAllow(b *testing.B) {
	lim := rate.NewLimiter(1000, 100)
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(100 * time.Microsecond)
		lim.AllowN(now, 1)
	}
}

// BenchmarkTimeRateAllowWallClock is rate.Limiter.Allow as usually called
// (it reads the clock itself).
func BenchmarkTimeRateAllowWallClock(b *testing.B) {
	lim := rate.NewLimiter(1e9, 100)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		lim.Allow()
	}
}

// BenchmarkLocalAllowParallel spreads 1024 keys over all Ps.
func BenchmarkLocalAllowParallel(b *testing.B) {
	l := NewLocal()
	r := Rule{Algorithm: TokenBucket, ReplenishRate: 1000, Burst: 100}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "tenant-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		l.Allow(context.Background(), keys[i], r, 1, t0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := 0
		for pb.Next() {
			i++
			l.Allow(ctx, keys[i&1023], r, 1, t0.Add(time.Duration(i)*time.Microsecond))
		}
	})
}
