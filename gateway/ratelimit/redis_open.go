package ratelimit

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// Warm-up at Open: connections opened and how long it may take.
const (
	redisWarmConns   = 8
	redisWarmTimeout = time.Second
)

// openRedis builds the store for StoreConfig kind "redis": a RedisStore over
// OpenRedis(cfg.URL), wrapped in a Failover with cfg's timeout, share and
// fail-open choice. It warms the store (connections, scripts) for up to a
// second, so the first decisions do not spend their few milliseconds
// connecting; when Redis is down or slow at start, Open still succeeds with
// the breaker open — decisions fall back at once and a probe finds Redis
// when it comes. The Closer closes the Redis client.
func openRedis(cfg StoreConfig) (Store, io.Closer, error) {
	client, err := OpenRedis(cfg.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("ratelimit: store field url: %w", err)
	}
	opts := []FailoverOption{FailoverName(wire.StoreRedis), FailoverLogger(cfg.Logger)}
	if cfg.TimeoutMs > 0 {
		opts = append(opts, FailoverTimeout(time.Duration(cfg.TimeoutMs)*time.Millisecond))
	}
	if cfg.Share > 0 {
		opts = append(opts, FailoverShare(cfg.Share))
	}
	if cfg.FailOpen != nil && !*cfg.FailOpen {
		opts = append(opts, FailoverFailClosed(true))
	}
	rs := NewRedis(client)
	f, err := NewFailover(rs, opts...)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisWarmTimeout)
	defer cancel()
	if err := rs.Warm(ctx, redisWarmConns); err != nil {
		f.trip(fmt.Errorf("warm-up at start: %w", err))
	}
	return f, client, nil
}
