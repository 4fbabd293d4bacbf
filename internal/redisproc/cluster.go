package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster defaults.
const (
	// DefaultClusterNodeTimeout is the cluster-node-timeout of StartCluster:
	// how long a master may not answer before the others mark it failing
	// and one of its replicas takes over (a failover then takes about
	// twice as long, with the election).
	DefaultClusterNodeTimeout = time.Second
	// MinClusterMasters is the least number of masters StartCluster starts:
	// Redis Cluster needs a majority of masters to agree that one failed.
	MinClusterMasters = 3
	// clusterSlots is the number of hash slots of Redis Cluster.
	clusterSlots = 16384
	// clusterReadyTimeout bounds StartCluster when ctx has no deadline.
	clusterReadyTimeout = 30 * time.Second
)

// ClusterSpec describes a Redis Cluster for StartCluster.
type ClusterSpec struct {
	// Masters is the number of masters, ≥ MinClusterMasters; the hash slots
	// are split evenly between them.
	Masters int
	// Replicas is the number of replicas of each master (0: none; a killed
	// master's slots then stay down until it restarts).
	Replicas int
	// NodeTimeout is cluster-node-timeout; 0 means
	// DefaultClusterNodeTimeout.
	NodeTimeout time.Duration
}

// Validate reports the first invalid field of s, naming it.
func (s ClusterSpec) Validate() error {
	switch {
	case s.Masters < MinClusterMasters:
		return fmt.Errorf("redis cluster: masters %d, want ≥ %d (a failure needs a majority of masters to agree)", s.Masters, MinClusterMasters)
	case s.Replicas < 0:
		return fmt.Errorf("redis cluster: replicas %d, want ≥ 0", s.Replicas)
	case s.NodeTimeout < 0:
		return fmt.Errorf("redis cluster: node timeout %v, want ≥ 0 (0: %v)", s.NodeTimeout, DefaultClusterNodeTimeout)
	case s.NodeTimeout > 0 && s.NodeTimeout < 100*time.Millisecond:
		return fmt.Errorf("redis cluster: node timeout %v, want ≥ 100ms (shorter fails over on any scheduling hiccup)", s.NodeTimeout)
	}
	return nil
}

// Cluster is a Redis Cluster of redis-server child processes on loopback:
// Masters masters holding every hash slot, each with Replicas replicas,
// persistence off. Node i < Masters is master i as started; the replicas of
// master i follow from index Masters + i×Replicas. Roles change with
// failovers: ask MasterOf and Masters for the current ones. Each node keeps
// its port (and cluster bus port) across Kill and Restart; a restarted
// node rejoins the cluster (an old master as a replica of the one that
// replaced it).
type Cluster struct {
	spec  ClusterSpec
	dir   string
	nodes []*Process
	ids   []string // node ids, by index
}

// StartCluster starts a Redis Cluster as spec says, in dir (one folder per
// node, node-<i>, with its log and nodes.conf), assigns the slots, joins the
// nodes (CLUSTER ADDSLOTSRANGE, MEET, REPLICATE) and waits until every node
// reports cluster_state:ok and every replica is in sync (bounded by ctx, or
// 30 s). It needs redis-server ≥ 7 on PATH (the error wraps ErrNotFound
// when it is missing). On error every started node is killed.
func StartCluster(ctx context.Context, dir string, spec ClusterSpec, opts ...Option) (*Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.NodeTimeout == 0 {
		spec.NodeTimeout = DefaultClusterNodeTimeout
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, clusterReadyTimeout)
		defer cancel()
	}
	c := &Cluster{spec: spec, dir: dir}
	n := spec.Masters * (1 + spec.Replicas)
	for i := 0; i < n; i++ {
		p, err := startClusterNode(ctx, filepath.Join(dir, "node-"+strconv.Itoa(i)), spec.NodeTimeout, opts)
		if err != nil {
			c.Kill()
			return nil, fmt.Errorf("redis cluster: node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, p)
	}
	if err := c.create(ctx); err != nil {
		c.Kill()
		return nil, fmt.Errorf("redis cluster: %w%s", err, redisLogTail(c.nodes[0].LogPath()))
	}
	return c, nil
}

// startClusterNode starts one redis-server in cluster mode with its own bus
// port (kept across restarts, as nodes.conf and the other nodes know it).
func startClusterNode(ctx context.Context, dir string, nodeTimeout time.Duration, opts []Option) (*Process, error) {
	var lastPort, bus int
	extra := func(port int) []string {
		if port != lastPort { // a new port for a new attempt: a new bus port too
			lastPort, bus = port, 0
			if b, err := freeLoopbackPort(); err == nil && b != port {
				bus = b
			}
		}
		args := []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", // in --dir, the node's folder
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			// The other masters keep serving their slots while one is down
			// (an operator's choice: partial service over none).
			"--cluster-require-full-coverage", "no",
			// A replica takes over however long it was cut off: no data
			// persists anyway, and a limit is better served than not.
			"--cluster-replica-validity-factor", "0",
			"--cluster-allow-replica-migration", "no",
			// A (re)joining replica syncs at once instead of waiting 5 s
			// for more replicas to share the transfer.
			"--repl-diskless-sync-delay", "0",
		}
		if bus != 0 {
			args = append(args, "--cluster-port", strconv.Itoa(bus))
		}
		return args
	}
	opts = append(append([]Option(nil), opts...), func(s *settings) { s.extra = extra })
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("node dir: %w", err)
	}
	return Start(ctx, dir, opts...)
}

// create assigns slots, joins the nodes, sets up replicas and waits for the
// cluster to be ready.
func (c *Cluster) create(ctx context.Context) error {
	clients := c.clients()
	defer closeAll(clients)
	c.ids = make([]string, len(c.nodes))
	for i, cl := range clients {
		id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("node %d: CLUSTER MYID: %w", i, err)
		}
		c.ids[i] = id
	}
	for m := 0; m < c.spec.Masters; m++ {
		lo, hi := m*clusterSlots/c.spec.Masters, (m+1)*clusterSlots/c.spec.Masters-1
		if err := clients[m].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("node %d: CLUSTER ADDSLOTSRANGE %d %d: %w", m, lo, hi, err)
		}
	}
	bus0, err := c.busPort(ctx, clients[0])
	if err != nil {
		return err
	}
	for i := 1; i < len(clients); i++ {
		if err := clients[i].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", c.nodes[0].Port(), bus0).Err(); err != nil {
			return fmt.Errorf("node %d: CLUSTER MEET: %w", i, err)
		}
	}
	// Every node must know every other before a replica can name its master.
	if err := poll(ctx, "every node to know the others", func() error {
		for i, cl := range clients {
			nodes, err := cl.Do(ctx, "CLUSTER", "NODES").Text()
			if err != nil {
				return fmt.Errorf("node %d: %w", i, err)
			}
			for _, id := range c.ids {
				if !strings.Contains(nodes, id) {
					return fmt.Errorf("node %d does not know %s yet", i, id)
				}
			}
			if strings.Contains(nodes, "handshake") {
				return fmt.Errorf("node %d: handshake in progress", i)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for m := 0; m < c.spec.Masters; m++ {
		for r := 0; r < c.spec.Replicas; r++ {
			i := c.spec.Masters + m*c.spec.Replicas + r
			if err := clients[i].Do(ctx, "CLUSTER", "REPLICATE", c.ids[m]).Err(); err != nil {
				return fmt.Errorf("node %d: CLUSTER REPLICATE %s: %w", i, c.ids[m], err)
			}
		}
	}
	return c.WaitHealthy(ctx)
}

// busPort is the cluster bus port of the node behind cl.
func (c *Cluster) busPort(ctx context.Context, cl *redis.Client) (int, error) {
	v, err := cl.ConfigGet(ctx, "cluster-port").Result()
	if err != nil {
		return 0, fmt.Errorf("CONFIG GET cluster-port: %w", err)
	}
	if p, err := strconv.Atoi(v["cluster-port"]); err == nil && p > 0 {
		return p, nil
	}
	port, _ := strconv.Atoi(strings.TrimPrefix(cl.Options().Addr, "127.0.0.1:"))
	return port + 10000, nil // Redis's default bus port
}

// WaitHealthy waits until every running node reports cluster_state:ok with
// all slots assigned, every slot is served by a running master, and every
// running replica is in sync with its master. It returns ctx's error,
// wrapped with what was still missing, when ctx ends first.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return poll(ctx, "the cluster to be healthy", func() error {
		clients := c.clients()
		defer closeAll(clients)
		for i, cl := range clients {
			if cl == nil {
				continue
			}
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil {
				return fmt.Errorf("node %d: CLUSTER INFO: %w", i, err)
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_assigned:16384") {
				return fmt.Errorf("node %d: not ok yet", i)
			}
			repl, err := cl.Info(ctx, "replication").Result()
			if err != nil {
				return fmt.Errorf("node %d: INFO replication: %w", i, err)
			}
			if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
				return fmt.Errorf("node %d: replica not in sync yet", i)
			}
		}
		masters, err := c.slotMasters(ctx)
		if err != nil {
			return err
		}
		for _, m := range masters {
			if m.node < 0 || !c.nodes[m.node].Running() {
				return fmt.Errorf("slots %d-%d served by %s, which is down", m.lo, m.hi, m.addr)
			}
		}
		return nil
	})
}

// URL is the redis+cluster:// URL gateways connect to: every node as a seed
// (ratelimit.OpenRedis's cluster form).
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	q := url.Values{"addr": addrs[1:]}
	return "redis+cluster://" + addrs[0] + "?" + q.Encode()
}

// Addrs are the nodes' addresses, by index.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// Nodes are the nodes, by index (see Cluster for the order).
func (c *Cluster) Nodes() []*Process { return c.nodes }

// Node is node i.
func (c *Cluster) Node(i int) *Process { return c.nodes[i] }

// Spec is the spec the cluster was started with (NodeTimeout filled in).
func (c *Cluster) Spec() ClusterSpec { return c.spec }

// Masters returns the indexes of the nodes serving slots now, as a running
// node sees it, in slot order.
func (c *Cluster) Masters(ctx context.Context) ([]int, error) {
	ranges, err := c.slotMasters(ctx)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, r := range ranges {
		if len(out) == 0 || out[len(out)-1] != r.node {
			out = append(out, r.node)
		}
	}
	return out, nil
}

// MasterOf returns the index of the node serving key's hash slot now, as a
// running node sees it.
func (c *Cluster) MasterOf(ctx context.Context, key string) (int, error) {
	cl := c.anyClient()
	if cl == nil {
		return -1, errors.New("redis cluster: no node is running")
	}
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return -1, fmt.Errorf("redis cluster: CLUSTER KEYSLOT: %w", err)
	}
	ranges, err := c.slotMasters(ctx)
	if err != nil {
		return -1, err
	}
	for _, r := range ranges {
		if int(slot) >= r.lo && int(slot) <= r.hi {
			return r.node, nil
		}
	}
	return -1, fmt.Errorf("redis cluster: slot %d of %q is not served", slot, key)
}

// WaitFailover waits until the slots that node killed served are served by
// another running node, and returns that node's index. Use it after
// killing a master that has replicas.
func (c *Cluster) WaitFailover(ctx context.Context, killed int) (int, error) {
	lo := -1 // the first slot the killed node served
	if killed >= 0 && killed < c.spec.Masters {
		lo = killed * clusterSlots / c.spec.Masters
	} else {
		// A node that became a master through an earlier failover.
		ranges, err := c.slotMasters(ctx)
		if err != nil {
			return -1, err
		}
		for _, r := range ranges {
			if r.node == killed {
				lo = r.lo
			}
		}
		if lo < 0 {
			return -1, fmt.Errorf("redis cluster: node %d serves no slots", killed)
		}
	}
	var by int
	err := poll(ctx, fmt.Sprintf("a replica to take over the slots of node %d", killed), func() error {
		ranges, err := c.slotMasters(ctx)
		if err != nil {
			return err
		}
		for _, r := range ranges {
			if lo >= r.lo && lo <= r.hi {
				if r.node == killed || r.node < 0 || !c.nodes[r.node].Running() {
					return fmt.Errorf("slot %d still on %s", lo, r.addr)
				}
				by = r.node
				return nil
			}
		}
		return fmt.Errorf("slot %d not served", lo)
	})
	return by, err
}

// Kill SIGKILLs every node.
func (c *Cluster) Kill() {
	for _, n := range c.nodes {
		_ = n.Kill()
	}
}

// Stop ends every node gracefully (see Process.Stop) and returns the first
// error.
func (c *Cluster) Stop() error {
	var first error
	for _, n := range c.nodes {
		if err := n.Stop(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// slotRange is one range of hash slots and the node serving it.
type slotRange struct {
	lo, hi int
	addr   string
	node   int // index, -1 when the address is not one of ours
}

// slotMasters asks a running node which master serves which slots.
func (c *Cluster) slotMasters(ctx context.Context) ([]slotRange, error) {
	cl := c.anyClient()
	if cl == nil {
		return nil, errors.New("redis cluster: no node is running")
	}
	defer cl.Close()
	slots, err := cl.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("redis cluster: CLUSTER SLOTS: %w", err)
	}
	out := make([]slotRange, 0, len(slots))
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		r := slotRange{lo: int(s.Start), hi: int(s.End), addr: s.Nodes[0].Addr, node: -1}
		for i, n := range c.nodes {
			if n.Addr() == r.addr {
				r.node = i
			}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("redis cluster: no slot is served")
	}
	// CLUSTER SLOTS lists ranges in no set order.
	slices.SortFunc(out, func(a, b slotRange) int { return a.lo - b.lo })
	return out, nil
}

// clients returns a client per node, nil for nodes not running.
func (c *Cluster) clients() []*redis.Client {
	out := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		if n.Running() {
			out[i] = adminClient(n.Addr())
		}
	}
	return out
}

// anyClient returns a client to the first running node, nil when none runs.
func (c *Cluster) anyClient() *redis.Client {
	for _, n := range c.nodes {
		if n.Running() {
			return adminClient(n.Addr())
		}
	}
	return nil
}

func adminClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 1,
	})
}

func closeAll(cs []*redis.Client) {
	for _, c := range cs {
		if c != nil {
			_ = c.Close()
		}
	}
}

// poll calls check every 20 ms until it returns nil or ctx ends; then the
// error says what was awaited and the last reason.
func poll(ctx context.Context, what string, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
