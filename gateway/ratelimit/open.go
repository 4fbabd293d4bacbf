package ratelimit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// StoreConfig selects and configures a Store.
type StoreConfig struct {
	// Kind is "local" (the default when empty) or "redis".
	Kind string `yaml:"kind" json:"kind"`
	// URL locates a remote store (redis://, rediss://, or a comma list).
	URL string `yaml:"url" json:"url"`
	// TimeoutMs bounds one remote decision; 0 means the store's default.
	TimeoutMs int `yaml:"timeout_ms" json:"timeout_ms"`
	// FailOpen chooses, for a remote store, to fall back to local decisions
	// (true, the default when nil) or to deny (false) while it is unreachable.
	FailOpen *bool `yaml:"fail_open" json:"fail_open"`
	// Share is this instance's share of a global limit in (0, 1]; 0 means 1.
	// The local store decides with every rule scaled by it (Rule.ShareFor),
	// a remote store's local fallback likewise.
	Share float64 `yaml:"share" json:"share"`
	// Logger hears a remote store's failover: its breaker opening and
	// closing (see FailoverLogger). Nil: discard.
	Logger *slog.Logger `yaml:"-" json:"-"`
}

// Validate reports the first invalid field of c, naming it.
func (c StoreConfig) Validate() error {
	if c.TimeoutMs < 0 {
		return fmt.Errorf("ratelimit: store field timeout_ms: %d, want ≥ 0", c.TimeoutMs)
	}
	if math.IsNaN(c.Share) || c.Share < 0 || c.Share > 1 {
		return fmt.Errorf("ratelimit: store field share: %v, want a value in (0, 1] (0 means 1)", c.Share)
	}
	switch c.Kind {
	case "", wire.StoreLocal:
	case wire.StoreRedis:
		if c.URL == "" {
			return fmt.Errorf("ratelimit: store field url: missing, required for kind redis")
		}
	default:
		return fmt.Errorf("ratelimit: store field kind: %q, want \"local\" or \"redis\"", c.Kind)
	}
	return nil
}

// Open builds the Store cfg describes and the Closer that releases it (close
// it when the store is no longer used).
func Open(cfg StoreConfig) (Store, io.Closer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	switch cfg.Kind {
	case "", wire.StoreLocal:
		l := NewLocal()
		if cfg.Share > 0 && cfg.Share < 1 {
			// N gateways with in-process stores each take their share:
			// the static split of seed 002 (limit / instances).
			share := cfg.Share
			return StoreFunc(func(ctx context.Context, key string, rule Rule, cost int64, now time.Time) (Decision, error) {
				return l.Allow(ctx, key, rule.ShareFor(share, cost), cost, now)
			}), l, nil
		}
		return l, l, nil
	case wire.StoreRedis:
		return openRedis(cfg) // redis_open.go: RedisStore behind a Failover
	}
	return nil, nil, fmt.Errorf("ratelimit: store field kind: %q, want \"local\" or \"redis\"", cfg.Kind)
}
