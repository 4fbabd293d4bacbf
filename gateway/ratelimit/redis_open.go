package ratelimit

import (
	"fmt"
	"io"
	"time"
)

// openRedis builds the store for StoreConfig kind "redis": a RedisStore over
// OpenRedis(cfg.URL), wrapped in a Failover with cfg's timeout, share and
// fail-open choice. It does not contact Redis, so a Redis that is down at
// start only means the first decisions fall back. The Closer closes the
// Redis client.
func openRedis(cfg StoreConfig) (Store, io.Closer, error) {
	client, err := OpenRedis(cfg.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("ratelimit: store field url: %w", err)
	}
	opts := []FailoverOption{FailoverName("redis")}
	if cfg.TimeoutMs > 0 {
		opts = append(opts, FailoverTimeout(time.Duration(cfg.TimeoutMs)*time.Millisecond))
	}
	if cfg.Share > 0 {
		opts = append(opts, FailoverShare(cfg.Share))
	}
	if cfg.FailOpen != nil && !*cfg.FailOpen {
		opts = append(opts, FailoverFailClosed(true))
	}
	f, err := NewFailover(NewRedis(client), opts...)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return f, client, nil
}
