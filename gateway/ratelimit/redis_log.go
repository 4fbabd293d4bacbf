package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisClientLog sends go-redis's own log lines — a failed dial (one per
// attempt: eight at a warm-up, then one per probe while Redis is down), a
// cluster's slot reload — to l at debug level. Otherwise go-redis prints
// them to the process's stderr in a format of its own, whatever the log
// level; the Failover's warning already reports a store that fails, once
// per breaker opening. go-redis has one logger per process, so the last
// call wins: a command calls it once, with its own logger.
func RedisClientLog(l *slog.Logger) { redis.SetLogger(redisClientLog{l}) }

// redisClientLog is go-redis's logging interface over a slog.Logger.
type redisClientLog struct{ l *slog.Logger }

func (r redisClientLog) Printf(ctx context.Context, format string, v ...any) {
	if !r.l.Enabled(ctx, slog.LevelDebug) {
		return // not formatted for nothing
	}
	r.l.DebugContext(ctx, strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "), "source", "go-redis")
}
