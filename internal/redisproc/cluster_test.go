package redisproc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestClusterSpecValidate(t *testing.T) {
	tests := []struct {
		spec ClusterSpec
		want string
	}{
		{ClusterSpec{Masters: 3}, ""},
		{ClusterSpec{Masters: 5, Replicas: 1, NodeTimeout: 500 * time.Millisecond}, ""},
		{ClusterSpec{Masters: 2}, "masters 2"},
		{ClusterSpec{Masters: 3, Replicas: -1}, "replicas"},
		{ClusterSpec{Masters: 3, NodeTimeout: -time.Second}, "node timeout"},
		{ClusterSpec{Masters: 3, NodeTimeout: time.Millisecond}, "node timeout"},
	}
	for _, tt := range tests {
		err := tt.spec.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: err %v, want %q", tt.spec, err, tt.want)
		}
	}
	if _, err := StartCluster(context.Background(), t.TempDir(), ClusterSpec{Masters: 1}); err == nil {
		t.Error("StartCluster with one master succeeded")
	}
}

func TestClusterWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := StartCluster(context.Background(), t.TempDir(), ClusterSpec{Masters: 3})
	if err == nil || !strings.Contains(err.Error(), "redis-server") {
		t.Fatalf("err %v, want one naming redis-server", err)
	}
}

// A real cluster: three masters with a replica each. Keys spread over the
// masters; killing a master (SIGKILL) hands its slots to its replica; the
// killed node restarts and rejoins as a replica.
func TestClusterFailover(t *testing.T) {
	needRedisServer(t)
	if testing.Short() {
		t.Skip("-short: a failover takes a few seconds")
	}
	// Bounds for a loaded machine; it takes about 5 s on an idle one.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, t.TempDir(), ClusterSpec{Masters: 3, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	if len(c.Nodes()) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes()))
	}
	masters, err := c.Masters(ctx)
	if err != nil || fmt.Sprint(masters) != "[0 1 2]" {
		t.Fatalf("masters %v %v, want [0 1 2]", masters, err)
	}
	if !strings.HasPrefix(c.URL(), "redis+cluster://127.0.0.1:") || strings.Count(c.URL(), "addr=") != 5 {
		t.Errorf("URL %q, want every node as a seed", c.URL())
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
	defer cc.Close()
	owners := map[int]bool{}
	var victimKey string
	for i := 0; i < 30; i++ {
		k := fmt.Sprintf("k%d", i)
		if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		m, err := c.MasterOf(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		owners[m] = true
		if m == 0 {
			victimKey = k
		}
	}
	if len(owners) != 3 || victimKey == "" {
		t.Fatalf("30 keys landed on masters %v, want all three", owners)
	}
	// Replication is asynchronous: wait for the replica to have the key.
	replica := redis.NewClient(&redis.Options{Addr: c.Node(3).Addr()})
	defer replica.Close()
	if err := poll(ctx, "the replica to have the key", func() error {
		if err := replica.Do(ctx, "READONLY").Err(); err != nil {
			return err
		}
		return replica.Get(ctx, victimKey).Err()
	}); err != nil {
		t.Fatal(err)
	}

	if err := c.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	by, err := c.WaitFailover(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if by != 3 {
		t.Fatalf("slots of node 0 taken over by node %d, want its replica 3", by)
	}
	if m, err := c.MasterOf(ctx, victimKey); err != nil || m != 3 {
		t.Fatalf("MasterOf(%s) = %d %v after the failover, want 3", victimKey, m, err)
	}
	cc.ReloadState(ctx)
	if err := poll(ctx, "the client to read through the new master", func() error {
		// One try may hang on the dead node's address; it must not use
		// up the test's whole budget.
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := cc.Get(tctx, victimKey).Err(); err != nil {
			cc.ReloadState(ctx)
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if err := c.Node(0).Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if masters, _ := c.Masters(ctx); fmt.Sprint(masters) != "[3 1 2]" {
		t.Fatalf("masters %v after node 0 returned, want [3 1 2] (node 0 now a replica)", masters)
	}
}

// Without replicas a killed master's slots are down, the other masters keep
// serving theirs (cluster-require-full-coverage no), and a restart brings
// the slots back, empty.
func TestClusterMasterLossWithoutReplicas(t *testing.T) {
	needRedisServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := StartCluster(ctx, t.TempDir(), ClusterSpec{Masters: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1})
	defer cc.Close()
	keyOn := map[int]string{}
	for i := 0; len(keyOn) < 3 && i < 100; i++ {
		k := fmt.Sprintf("k%d", i)
		m, err := c.MasterOf(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		keyOn[m] = k
		if err := cc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cc.Get(ctx, keyOn[1]).Err(); err == nil {
		t.Fatal("a key of the killed master was served")
	}
	for _, m := range []int{0, 2} {
		if v, err := cc.Get(ctx, keyOn[m]).Result(); err != nil || v != "v" {
			t.Fatalf("key on master %d: %q %v, want it served while master 1 is down", m, v, err)
		}
	}
	if err := c.Node(1).Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, "master 1 to serve again", func() error {
		err := cc.Get(ctx, keyOn[1]).Err()
		if err == redis.Nil {
			return nil // back, and empty: no persistence
		}
		return fmt.Errorf("GET: %v", err)
	}); err != nil {
		t.Fatal(err)
	}
}
