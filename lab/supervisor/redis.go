package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

// ErrNoRedisServer is returned (wrapped) when the experiment asks for
// redis-server (`redis: server` or `cluster`) and it is not on PATH.
var ErrNoRedisServer = redisproc.ErrNotFound

// RedisChild is one Redis child process of the lab: redis-server or the
// embedded server, on a free loopback port, no persistence, the same port
// across Kill and Restart.
type RedisChild = redisproc.Process

// Redis kinds as the summary names them (runfiles.RedisSummary.Kind).
const (
	RedisKindOff      = "off"
	RedisKindServer   = string(redisproc.KindServer)
	RedisKindEmbedded = string(redisproc.KindEmbedded)
	RedisKindCluster  = "cluster"
	RedisKindExternal = "external"
)

// clusterDir is the folder, under the logs folder, of a cluster's nodes
// (node-<i>/redis.log, nodes.conf).
const clusterDir = "redis-cluster"

// RedisInfo is the Redis the gateways share their limits through.
type RedisInfo struct {
	Kind string // RedisKind…
	// Addr is host:port: the server, a cluster's first node, an external
	// Redis's host (never its credentials); "" when off.
	Addr string
	// URL is what the gateways connect to ("" when off).
	URL string
	// Nodes is the number of processes the lab runs for it (0 for off and
	// external) and Up how many of them run now.
	Nodes, Up int
}

// StartRedis starts the lab's Redis child as spec asks (kinds auto,
// server, embedded), logging to dir/redis.log; exe is the levee binary
// whose `redis` subcommand is the embedded server. The child is started
// with StartProcess, so it dies with the lab.
func StartRedis(ctx context.Context, dir, exe string, kind string) (*RedisChild, error) {
	opts := []redisproc.Option{
		redisproc.WithStarter(StartProcess),
		redisproc.WithEmbeddedCommand(redisproc.LeveeCommand(exe)),
	}
	var (
		r   *RedisChild
		err error
	)
	switch kind {
	case experiment.RedisAuto:
		r, err = redisproc.StartAuto(ctx, dir, opts...)
	case experiment.RedisServer:
		r, err = redisproc.Start(ctx, dir, opts...)
		if errors.Is(err, ErrNoRedisServer) {
			err = fmt.Errorf("%w; `redis: auto` or `redis: embedded` runs the embedded server instead", err)
		}
	case experiment.RedisEmbedded:
		r, err = redisproc.StartEmbedded(ctx, dir, opts...)
	default:
		return nil, fmt.Errorf("lab: redis: kind %q is not a single server", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("lab: redis: %s: %w", kind, err)
	}
	return r, nil
}

// StartRedisCluster starts the cluster spec asks for under dir. Without
// redis-server the error wraps ErrNoRedisServer and says there is no
// embedded cluster.
func StartRedisCluster(ctx context.Context, dir string, spec experiment.RedisSpec) (*redisproc.Cluster, error) {
	c, err := redisproc.StartCluster(ctx, dir, redisproc.ClusterSpec{Masters: spec.Masters, Replicas: spec.ClusterReplicas()},
		redisproc.WithStarter(StartProcess))
	if errors.Is(err, ErrNoRedisServer) {
		return nil, fmt.Errorf("lab: redis: cluster needs redis-server (≥ 7) on PATH — there is no embedded cluster: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("lab: redis: cluster: %w", err)
	}
	return c, nil
}

// startRedis starts what the experiment's `redis:` asks for. It fails when
// Redis was asked for and cannot be had: an experiment about shared limits
// must not pass on in-process ones.
func (s *Supervisor) startRedis(ctx context.Context) error {
	spec := s.cfg.Redis
	switch spec.Kind {
	case "", experiment.RedisOff:
		s.redisInfo = RedisInfo{Kind: RedisKindOff}
		return nil
	case experiment.RedisExternal:
		s.redisInfo = RedisInfo{Kind: RedisKindExternal, URL: spec.URL, Addr: urlHost(spec.URL)}
		s.progress("redis: external %s (the lab does not run it; redis faults cannot reach it)", s.redisInfo.Addr)
		s.event(runfiles.EventChildStart, "redis", map[string]any{"kind": RedisKindExternal, "addr": s.redisInfo.Addr})
		return nil
	case experiment.RedisCluster:
		c, err := StartRedisCluster(ctx, filepath.Join(s.cfg.LogsDir, clusterDir), spec)
		if err != nil {
			return err
		}
		s.cluster = c
		s.redisInfo = RedisInfo{Kind: RedisKindCluster, URL: c.URL(), Addr: c.Addrs()[0]}
		s.progress("redis: cluster of %d masters × %d replica(s), %d redis-server processes", spec.Masters, spec.ClusterReplicas(), len(c.Nodes()))
		for i, n := range c.Nodes() {
			role := "master"
			if i >= spec.Masters {
				role = "replica"
			}
			s.event(runfiles.EventChildStart, fmt.Sprintf("redis-%d", i), map[string]any{"kind": RedisKindCluster, "role": role, "addr": n.Addr(), "pid": n.PID()})
		}
		return nil
	}
	r, err := StartRedis(ctx, s.cfg.LogsDir, s.cfg.Executable, spec.Kind)
	if err != nil {
		return err
	}
	s.redis = r
	s.redisInfo = RedisInfo{Kind: string(r.Kind()), URL: r.URL(), Addr: r.Addr()}
	why := ""
	if spec.Kind == experiment.RedisAuto && r.Kind() == redisproc.KindEmbedded {
		why = " (redis-server is not on PATH)"
	}
	s.progress("redis: %s at %s%s", r.Kind(), r.Addr(), why)
	s.event(runfiles.EventChildStart, "redis", map[string]any{"kind": string(r.Kind()), "addr": r.Addr(), "url": r.URL(), "pid": r.PID()})
	return nil
}

// urlHost is the host:port of a Redis URL, without credentials (the URL
// itself when it does not parse).
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		if err == nil && u.Path != "" && u.Scheme == "unix" {
			return u.Path
		}
		return "?"
	}
	return u.Host
}

// Redis reports the Redis the gateways use and how many of its processes
// run now.
func (s *Supervisor) Redis() RedisInfo {
	info := s.redisInfo
	switch {
	case s.redis != nil:
		info.Nodes = 1
		if s.redis.Running() {
			info.Up = 1
		}
	case s.cluster != nil:
		for _, n := range s.cluster.Nodes() {
			info.Nodes++
			if n.Running() {
				info.Up++
			}
		}
	}
	return info
}

// RedisURL is the Redis the gateways use ("" for none).
func (s *Supervisor) RedisURL() string { return s.redisInfo.URL }

// errNoRedisChild says why a Redis fault cannot act on this lab's Redis.
func (s *Supervisor) errNoRedisChild(want string) error {
	switch s.redisInfo.Kind {
	case RedisKindCluster:
		if want == "single" {
			return errors.New("lab: this lab's Redis is a cluster: use redis_master_kill to kill one master")
		}
	case RedisKindExternal:
		return fmt.Errorf("lab: this lab's Redis is external (%s): the lab cannot kill it", s.redisInfo.Addr)
	case RedisKindServer, RedisKindEmbedded:
		if want == "cluster" {
			return fmt.Errorf("lab: this lab's Redis is one %s, not a cluster: use redis_outage (or `redis: cluster`)", s.redisInfo.Kind)
		}
	}
	return errors.New("lab: this lab has no Redis (the experiment says `redis: off`)")
}

// KillRedis SIGKILLs the lab's Redis server (kinds server and embedded).
func (s *Supervisor) KillRedis(ctx context.Context) error {
	if s.redis == nil {
		return s.errNoRedisChild("single")
	}
	pid := s.redis.PID()
	if err := s.redis.Kill(); err != nil {
		return err
	}
	s.event(runfiles.EventChildExit, "redis", map[string]any{"pid": pid, "status": "killed (SIGKILL)"})
	return nil
}

// RestartRedis brings the lab's Redis server back, empty, on its port.
func (s *Supervisor) RestartRedis(ctx context.Context) error {
	if s.redis == nil {
		return s.errNoRedisChild("single")
	}
	if err := s.redis.Restart(ctx); err != nil {
		return err
	}
	s.event(runfiles.EventChildStart, "redis", map[string]any{"kind": string(s.redis.Kind()), "addr": s.redis.Addr(), "pid": s.redis.PID(), "restart": "redis"})
	return nil
}

// RedisMasterKilled is what KillRedisMaster did.
type RedisMasterKilled struct {
	Node int    // the node's index in the cluster
	Addr string // its address
	At   time.Time
}

// KillRedisMaster SIGKILLs one master of the lab's cluster: master (0-based)
// among the masters in slot order, or for -1 the master holding the most
// keys now (the one whose loss matters most).
func (s *Supervisor) KillRedisMaster(ctx context.Context, master int) (RedisMasterKilled, error) {
	if s.cluster == nil {
		return RedisMasterKilled{}, s.errNoRedisChild("cluster")
	}
	masters, err := s.cluster.Masters(ctx)
	if err != nil {
		return RedisMasterKilled{}, fmt.Errorf("lab: redis cluster: %w", err)
	}
	node := -1
	switch {
	case master == -1:
		node, err = s.busiestMaster(ctx, masters)
		if err != nil {
			return RedisMasterKilled{}, err
		}
	case master >= 0 && master < len(masters):
		node = masters[master]
	default:
		return RedisMasterKilled{}, fmt.Errorf("lab: redis cluster: master %d does not exist (0..%d, or -1 for the busiest)", master, len(masters)-1)
	}
	if node < 0 {
		return RedisMasterKilled{}, fmt.Errorf("lab: redis cluster: master %d is not one of the lab's nodes", master)
	}
	n := s.cluster.Node(node)
	pid := n.PID()
	if err := n.Kill(); err != nil {
		return RedisMasterKilled{}, fmt.Errorf("lab: redis cluster: kill node %d: %w", node, err)
	}
	k := RedisMasterKilled{Node: node, Addr: n.Addr(), At: time.Now()}
	s.event(runfiles.EventChildExit, fmt.Sprintf("redis-%d", node), map[string]any{"pid": pid, "addr": k.Addr, "role": "master", "status": "killed (SIGKILL)"})
	return k, nil
}

// busiestMaster is the master (node index) holding the most keys.
func (s *Supervisor) busiestMaster(ctx context.Context, masters []int) (int, error) {
	best, most := -1, int64(-1)
	for _, m := range masters {
		if m < 0 {
			continue
		}
		n, err := s.cluster.DBSize(ctx, m)
		if err != nil {
			return -1, fmt.Errorf("lab: redis cluster: %w", err)
		}
		if n > most {
			best, most = m, n
		}
	}
	if best < 0 {
		return -1, errors.New("lab: redis cluster: no master is one of the lab's nodes")
	}
	return best, nil
}

// WaitRedisFailover waits until the slots of the killed node are served
// by another node and returns it (index and address).
func (s *Supervisor) WaitRedisFailover(ctx context.Context, killed int) (int, string, error) {
	if s.cluster == nil {
		return -1, "", s.errNoRedisChild("cluster")
	}
	by, err := s.cluster.WaitFailover(ctx, killed)
	if err != nil {
		return -1, "", fmt.Errorf("lab: redis cluster: %w", err)
	}
	return by, s.cluster.Node(by).Addr(), nil
}

// RestartRedisNode starts a killed cluster node again on its ports (it
// rejoins, as a replica of the node that took its slots) and waits until
// the cluster is healthy.
func (s *Supervisor) RestartRedisNode(ctx context.Context, node int) error {
	if s.cluster == nil {
		return s.errNoRedisChild("cluster")
	}
	if node < 0 || node >= len(s.cluster.Nodes()) {
		return fmt.Errorf("lab: redis cluster: node %d does not exist", node)
	}
	n := s.cluster.Node(node)
	if !n.Running() {
		if err := n.Restart(ctx); err != nil {
			return fmt.Errorf("lab: redis cluster: restart node %d: %w", node, err)
		}
		s.event(runfiles.EventChildStart, fmt.Sprintf("redis-%d", node), map[string]any{"kind": RedisKindCluster, "addr": n.Addr(), "pid": n.PID(), "restart": "redis"})
	}
	if err := s.cluster.WaitHealthy(ctx); err != nil {
		return fmt.Errorf("lab: redis cluster: %w", err)
	}
	return nil
}

// redisPIDs adds the Redis processes to m.
func (s *Supervisor) redisPIDs(m map[string]int) {
	if s.redis != nil {
		m["redis"] = s.redis.PID()
	}
	if s.cluster != nil {
		for i, n := range s.cluster.Nodes() {
			m[fmt.Sprintf("redis-%d", i)] = n.PID()
		}
	}
}

// closeRedis stops the Redis processes.
func (s *Supervisor) closeRedis() {
	if s.redis != nil {
		_ = s.redis.Stop()
	}
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
}
