package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slotKeys are limit keys chosen to trip up hash tags: braces in the
// tenant's name, an empty name, non-ASCII.
var slotKeys = []string{
	"tenant-a:ai", "tenant-b:standard", "", ":", "{", "}", "{}", "}{", "a{b", "a}b", "a{b}c",
	"{tenant}:ai", "x{}y", "{{}}", "tenant with spaces:agent", "租户:ai", "a:b:c:d", "123456789",
}

// KeySlot is CLUSTER KEYSLOT: the CRC16 reference vector, and every key
// of slotKeys (and each script key built from it) as a real Redis hashes it.
func TestKeySlotMatchesRedis(t *testing.T) {
	if got := KeySlot("123456789"); got != 12739 { // CRC-16/XMODEM("123456789") = 0x31C3
		t.Fatalf("KeySlot(123456789) = %d, want 12739", got)
	}
	// The Redis Cluster spec's examples of hash tags.
	for _, tt := range []struct{ key, same string }{
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"}, // an empty tag: the whole key
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
	} {
		if got, want := KeySlot(tt.key), int(crc16(tt.same)%16384); got != want {
			t.Errorf("KeySlot(%q) = %d, want the slot of %q, %d", tt.key, got, tt.same, want)
		}
	}
	// CLUSTER KEYSLOT answers only in cluster mode.
	c := redis.NewClient(&redis.Options{Addr: sharedCluster(t).Node(0).Addr()})
	defer c.Close()
	s := NewRedis(c)
	for _, k := range slotKeys {
		for _, a := range []Algorithm{SlidingWindow, TokenBucket} {
			for _, rk := range append(s.scriptKeys(k, a), k) {
				want, err := c.ClusterKeySlot(context.Background(), rk).Result()
				if err != nil {
					t.Fatalf("CLUSTER KEYSLOT %q: %v", rk, err)
				}
				if got := KeySlot(rk); int64(got) != want {
					t.Errorf("KeySlot(%q) = %d, Redis says %d", rk, got, want)
				}
			}
		}
	}
}

// No decision touches two slots: the keys of each script call share one
// hash slot for every limit key, and Shard names that slot.
func TestDecisionKeysShareOneSlot(t *testing.T) {
	keys := append([]string(nil), slotKeys...)
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab{}:- 0")
	for range 2000 { // random keys over an alphabet heavy in braces
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		keys = append(keys, string(b))
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}) // never connects
	defer cc.Close()
	s := NewRedis(cc)
	for k, want := range map[string]string{
		"t1:ai": "levee:rl:{t1:ai}:sw", "": "levee:rl:{%}:sw", "a{b}": "levee:rl:{a%7Bb%7D}:sw", "%": "levee:rl:{%25}:sw",
	} {
		if got := s.RedisKey(k, SlidingWindow); got != want {
			t.Errorf("RedisKey(%q) = %q, want %q", k, got, want)
		}
	}
	owner := map[string]string{} // Redis key → limit key: escaping must not merge two limits
	for _, k := range append(keys, "%7B", "%", "%25") {
		if o, dup := owner[s.RedisKey(k, TokenBucket)]; dup && o != k {
			t.Fatalf("limit keys %q and %q share the Redis key %q", o, k, s.RedisKey(k, TokenBucket))
		}
		owner[s.RedisKey(k, TokenBucket)] = k
	}
	for _, k := range keys {
		shard := s.Shard(k)
		for _, a := range []Algorithm{SlidingWindow, TokenBucket} {
			ks := s.scriptKeys(k, a)
			for _, rk := range ks {
				if got := fmt.Sprint(KeySlot(rk)); got != shard {
					t.Fatalf("limit key %q, %s: script keys %q are in slots %d…, Shard says %s", k, a, ks, KeySlot(rk), shard)
				}
			}
		}
	}
	if NewRedis(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})).Shard("k") != "" {
		t.Error("a single-server store has more than one shard")
	}
}

// slotWatch records the keys of every script call a client makes.
type slotWatch struct {
	mu    sync.Mutex
	calls [][]string // KEYS of each EVAL/EVALSHA; guarded by mu
}

func (w *slotWatch) DialHook(next redis.DialHook) redis.DialHook { return next }
func (w *slotWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (w *slotWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			args := cmd.Args() // name, script or sha, numkeys, keys…, argv…
			n, _ := args[2].(int)
			keys := make([]string, 0, n)
			for _, k := range args[3 : 3+n] {
				keys = append(keys, fmt.Sprint(k))
			}
			w.mu.Lock()
			w.calls = append(w.calls, keys)
			w.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// On a real Redis Cluster, five stores (five gateways) decide for tenants
// spread over every master: no call fails (a CROSSSLOT would), every script
// call's keys are in one slot, and the state lands on the master that
// serves that slot.
func TestClusterDecisionsTouchOneSlot(t *testing.T) {
	cl := sharedCluster(t)
	prefix := fmt.Sprintf("test:%d:", time.Now().UnixNano()) // the shared cluster may hold other runs' keys
	const gateways = 5
	watch := &slotWatch{}
	stores := make([]*RedisStore, gateways)
	for i := range stores {
		c, err := OpenRedis(cl.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.AddHook(watch)
		stores[i] = NewRedis(c, RedisKeyPrefix(prefix))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rules := []Rule{
		{Algorithm: SlidingWindow, Limit: 5, Window: time.Minute},
		{Algorithm: TokenBucket, ReplenishRate: 1, Burst: 5},
	}
	masters := map[int]bool{}
	keys := append([]string{}, slotKeys...)
	for i := 0; i < 30; i++ {
		keys = append(keys, fmt.Sprintf("tenant-%d:ai", i))
	}
	for _, k := range keys {
		m, err := cl.MasterOf(ctx, stores[0].RedisKey(k, SlidingWindow))
		if err != nil {
			t.Fatal(err)
		}
		masters[m] = true
		for _, rule := range rules {
			admitted := 0
			for i := 0; i < 8; i++ { // 8 decisions over the 5 gateways: 5 admitted
				d, err := stores[i%gateways].Allow(ctx, k, rule, 1, time.Now())
				if err != nil {
					t.Fatalf("key %q %s: %v", k, rule.Algorithm, err)
				}
				if d.Allowed {
					admitted++
				}
			}
			if admitted != 5 {
				t.Fatalf("key %q %s: %d of 8 admitted across 5 gateways, want the limit 5", k, rule.Algorithm, admitted)
			}
		}
	}
	if len(masters) != 3 {
		t.Fatalf("keys landed on masters %v, want all three", masters)
	}
	watch.mu.Lock()
	calls := watch.calls
	watch.mu.Unlock()
	if want := len(keys) * len(rules) * 8; len(calls) < want {
		t.Fatalf("watched %d script calls, want ≥ %d", len(calls), want)
	}
	for _, ks := range calls {
		for _, k := range ks[1:] {
			if KeySlot(k) != KeySlot(ks[0]) {
				t.Fatalf("one script call touched slots %d and %d: keys %q", KeySlot(ks[0]), KeySlot(k), ks)
			}
		}
	}
	// The state is where the cluster says the slot is served.
	for _, k := range keys[:10] {
		rk := stores[0].RedisKey(k, SlidingWindow)
		m, err := cl.MasterOf(ctx, rk)
		if err != nil {
			t.Fatal(err)
		}
		node := redis.NewClient(&redis.Options{Addr: cl.Node(m).Addr()})
		n, err := node.Exists(ctx, rk, rk+":n").Result()
		node.Close()
		if err != nil || n != 2 {
			t.Fatalf("EXISTS %q on its master: %d %v, want both keys there", rk, n, err)
		}
	}
}

// A script given keys in two slots is refused with CROSSSLOT by a real
// cluster: the failure the hash tags avoid, shown so the test above could
// fail.
func TestClusterRefusesCrossSlotScripts(t *testing.T) {
	cl := sharedCluster(t)
	a, b := "levee:rl:{a}:sw", "levee:rl:{b}:sw"
	if KeySlot(a) == KeySlot(b) {
		t.Fatal("pick keys in two slots")
	}
	m, err := cl.MasterOf(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	node := redis.NewClient(&redis.Options{Addr: cl.Node(m).Addr()})
	defer node.Close()
	err = node.Eval(context.Background(), "return redis.call('GET', KEYS[1])", []string{a, b}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("EVAL over two slots: %v, want CROSSSLOT", err)
	}
}
