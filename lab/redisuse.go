package lab

import (
	"context"
	"errors"
)

// redisProc is the lab's Redis child (see StartRedis in redis.go).
type redisProc interface {
	URL() string
	Kill() error
	Restart(ctx context.Context) error
	Stop() error
}

// errNoRedis is returned by startRedis when redis-server is not on PATH.
var errNoRedis = errors.New("redis-server not available")

// startRedis starts a redis-server child for `redis: auto`.
// TODO(lab): switch to StartRedis once lab/redis.go lands.
func startRedis(ctx context.Context, dir string) (redisProc, error) {
	return nil, errNoRedis
}
