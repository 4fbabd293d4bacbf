package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Settler is a Store that can correct what an admitted request cost once
// its real cost is known (seed 004: reserve the estimated tokens, settle
// with the answer's usage). Settle adds delta to the cost key's earlier
// request took under rule: a negative delta refunds (never above the
// bucket's burst), a positive one charges the overuse, which may leave the
// bucket in debt that refill pays back before the next request passes.
// Only token buckets settle; a sliding window keeps the estimate (Settle
// does nothing). now is the caller's clock (ignored by Redis).
type Settler interface {
	Settle(ctx context.Context, key string, rule Rule, delta int64, now time.Time) error
}

// Settle implements Settler.
func (l *Local) Settle(ctx context.Context, key string, rule Rule, delta int64, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ratelimit: local settle %q: %w", key, err)
	}
	if err := rule.Validate(); err != nil {
		return fmt.Errorf("ratelimit: local settle %q: %w", key, err)
	}
	if rule.Algorithm != TokenBucket || delta == 0 {
		return nil
	}
	t := now.UnixNano()
	sh, e := l.lockEntry(key, rule.Algorithm)
	defer sh.mu.Unlock()
	e.settle(t, rule, delta)
	e.last, e.rule = t, rule
	return nil
}

// settle brings the bucket up to date, then applies delta.
func (e *entry) settle(now int64, r Rule, delta int64) {
	e.refill(now, r)
	e.tokens = math.Min(float64(r.Burst), e.tokens-float64(delta))
}

// Settle implements Settler with one script run (one round trip).
func (s *RedisStore) Settle(ctx context.Context, key string, rule Rule, delta int64, _ time.Time) error {
	if err := rule.Validate(); err != nil {
		return fmt.Errorf("ratelimit: redis settle %q: %w", key, err)
	}
	if err := rule.CheckRefill(); err != nil {
		return fmt.Errorf("ratelimit: redis settle %q: %w", key, err)
	}
	if rule.Algorithm != TokenBucket || delta == 0 {
		return nil
	}
	err := redisSettleScript.Run(ctx, s.client, []string{s.RedisKey(key, TokenBucket)},
		luaRate(rule.ReplenishRate), rule.Burst, delta).Err()
	if err != nil {
		return fmt.Errorf("ratelimit: redis settle %q: %w", key, err)
	}
	return nil
}

// redisSettleScript corrects a token bucket (redisTokenBucketScript's
// hash) by delta tokens: refill as of now, then subtract delta, capped at
// the burst; the bucket may go below zero (debt). It opens with the
// decision script's refill (tokenBucketRefillLua).
//
// KEYS[1] hash {tokens, ts}.
// ARGV    replenish rate (tokens/s), burst, delta.
// Returns the whole tokens left.
var redisSettleScript = redis.NewScript(tokenBucketRefillLua + `
local delta = tonumber(ARGV[3])
tokens = math.min(burst, tokens - delta)
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.0f', ts))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) * 1000 / rate) + 1000)
return math.floor(tokens)
`)

// Settle implements Settler: the shared store settles while the breaker
// of key's shard is closed (within the store timeout); otherwise, or when
// it fails, the local store settles this instance's share, as its
// decisions did. On a cluster a lost master sends only its own keys'
// settlements to the local share, as it does their decisions.
func (f *Failover) Settle(ctx context.Context, key string, rule Rule, delta int64, now time.Time) error {
	if rule.Algorithm != TokenBucket || delta == 0 {
		return nil
	}
	if ps, ok := f.primary.(Settler); ok && f.shardClosed(key) {
		callCtx, cancel := context.WithTimeout(ctx, f.timeout)
		err := ps.Settle(callCtx, key, rule, delta, now)
		cancel()
		if err == nil {
			return nil
		}
	}
	if ls, ok := f.local.(Settler); ok {
		return ls.Settle(ctx, key, rule.Scaled(f.share), int64(math.Round(float64(delta)*f.share)), now)
	}
	return nil
}

// shardClosed reports whether the breaker of key's shard is closed: its
// decisions go to the shared store.
func (f *Failover) shardClosed(key string) bool {
	shard := ""
	if f.sharder != nil {
		shard = f.sharder.Shard(key)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.breakers[shard]; b != nil {
		return b.state == BreakerClosed
	}
	return !f.clock().Before(f.trippedUntil) // a shard not seen yet starts open within a Trip
}
