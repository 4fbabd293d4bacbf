package lab

import "context"

// redisProc is the lab's Redis child (RedisChild in redis.go), behind an
// interface so that the lab's use of it stays small.
type redisProc interface {
	URL() string
	PID() int
	Kill() error
	Restart(ctx context.Context) error
	Stop() error
}

// errNoRedis is returned (wrapped) by startRedis when redis-server is not
// on PATH.
var errNoRedis = ErrNoRedisServer

// startRedis starts a redis-server child for `redis: auto`.
func startRedis(ctx context.Context, dir string) (redisProc, error) {
	r, err := StartRedis(ctx, dir)
	if err != nil {
		return nil, err
	}
	return r, nil
}
