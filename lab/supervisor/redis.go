package supervisor

import (
	"context"
	"fmt"

	"github.com/levee-lab/levee/internal/redisproc"
)

// ErrNoRedisServer is returned (wrapped) by StartRedis when redis-server is
// not on PATH. The lab then keeps rate limits in each gateway and says so.
var ErrNoRedisServer = redisproc.ErrNotFound

// RedisChild is the lab's redis-server child (`redis: auto`, the
// redis_outage fault): on a free loopback port, no persistence, the same
// port across Kill and Restart.
type RedisChild = redisproc.Process

// StartRedis starts the lab's redis-server, logging to dir/redis.log. It is
// started with StartProcess, so it dies with the lab.
func StartRedis(ctx context.Context, dir string) (*RedisChild, error) {
	r, err := redisproc.Start(ctx, dir, redisproc.WithStarter(StartProcess))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return r, nil
}
