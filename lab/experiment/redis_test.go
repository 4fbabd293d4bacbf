package experiment

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Every form of `redis:` parses to its spec, normalizes with the cluster
// defaults, and round-trips through run.json's JSON and back to YAML.
func TestRedisSpecForms(t *testing.T) {
	one, zero := 1, 0
	for _, tt := range []struct {
		yaml string
		want RedisSpec
		str  string // String()
		json string // as run.json writes it
	}{
		{"", RedisSpec{Kind: RedisOff}, "off", `"off"`},
		{"redis: off", RedisSpec{Kind: RedisOff}, "off", `"off"`},
		{"redis: auto", RedisSpec{Kind: RedisAuto}, "auto", `"auto"`},
		{"redis: server", RedisSpec{Kind: RedisServer}, "server", `"server"`},
		{"redis: embedded", RedisSpec{Kind: RedisEmbedded}, "embedded", `"embedded"`},
		{"redis: cluster", RedisSpec{Kind: RedisCluster, Masters: 3, Replicas: &one}, "cluster (3 masters, 1 replica(s) each)", `"cluster"`},
		{"redis: {kind: cluster, masters: 4, replicas: 0}", RedisSpec{Kind: RedisCluster, Masters: 4, Replicas: &zero}, "cluster (4 masters, 0 replica(s) each)", `{"kind":"cluster","masters":4,"replicas":0}`},
		{"redis: redis://127.0.0.1:6379/0", RedisSpec{Kind: RedisExternal, URL: "redis://127.0.0.1:6379/0"}, "redis://127.0.0.1:6379/0", `"redis://127.0.0.1:6379/0"`},
		{"redis: 'redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001'", RedisSpec{Kind: RedisExternal, URL: "redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001"}, "redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001", `"redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001"`},
		{"redis: {url: 'unix:///tmp/r.sock'}", RedisSpec{Kind: RedisExternal, URL: "unix:///tmp/r.sock"}, "unix:///tmp/r.sock", `"unix:///tmp/r.sock"`},
	} {
		t.Run(tt.yaml, func(t *testing.T) {
			e, err := ParseExperiment([]byte("name: x\nduration: 1s\n" + tt.yaml + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := e.Redis
			if got.Kind != tt.want.Kind || got.URL != tt.want.URL || got.Masters != tt.want.Masters ||
				(got.Replicas == nil) != (tt.want.Replicas == nil) || (got.Replicas != nil && *got.Replicas != *tt.want.Replicas) {
				t.Fatalf("spec %+v, want %+v", got, tt.want)
			}
			if got.String() != tt.str {
				t.Errorf("String %q, want %q", got.String(), tt.str)
			}
			b, err := json.Marshal(got)
			if err != nil || string(b) != tt.json {
				t.Errorf("JSON %s %v, want %s", b, err, tt.json)
			}
			var back RedisSpec
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			c := &Experiment{Redis: back}
			p := &problems{e: c}
			c.normalizeRedis(p)
			if len(p.errs) != 0 || c.Redis.String() != tt.str {
				t.Errorf("JSON round trip: %+v %v", c.Redis, p.errs)
			}
			y, err := yaml.Marshal(map[string]any{"redis": got})
			if err != nil {
				t.Fatal(err)
			}
			e2, err := ParseExperiment(append([]byte("name: x\nduration: 1s\n"), y...))
			if err != nil || e2.Redis.String() != tt.str {
				t.Errorf("YAML round trip %q: %+v %v", y, e2, err)
			}
			// A clone owns its replicas count.
			c2 := e.Clone()
			if c2.Redis.Replicas != nil && c2.Redis.Replicas == e.Redis.Replicas {
				t.Error("Clone shares Replicas")
			}
		})
	}
}

// A run.json written before the mapping form ("redis": "auto") still reads.
func TestRedisSpecOldRunJSON(t *testing.T) {
	var e Experiment
	if err := json.Unmarshal([]byte(`{"name":"x","redis":"auto"}`), &e); err != nil || e.Redis.Kind != RedisAuto {
		t.Fatalf("%+v %v", e.Redis, err)
	}
}

// A fault step that acts on the lab's Redis (redis_outage,
// redis_master_kill) is refused at load, naming the step, when the lab
// will run no Redis of its own — none, off, or an external one — and
// accepted when it will (auto, server, embedded, cluster).
func TestRedisFaultStepNeedsLabRedis(t *testing.T) {
	const head = "name: x\nduration: 20s\n"
	for _, tt := range []struct {
		name, yaml string
		want       string // substring of the error; "" when it loads
		not        string // must not be in the error
	}{
		{"outage, no redis section", "faults:\n  - {at: 1s, fault: redis_outage}\n",
			"line 4: faults.0 (redis_outage): the experiment has no redis: add redis: auto (or server, embedded) or drop the step", ""},
		{"outage, redis off", "redis: off\nfaults:\n  - {at: 1s, fault: redis_outage}\n",
			"line 5: faults.0 (redis_outage): the experiment has no redis", ""},
		{"master kill, no redis", "faults:\n  - {at: 1s, fault: redis_master_kill}\n",
			"line 4: faults.0 (redis_master_kill): the experiment has no redis: add redis: cluster or drop the step", ""},
		{"master kill, one embedded server", "redis: embedded\nfaults:\n  - {at: 1s, fault: redis_master_kill}\n",
			"line 5: faults.0 (redis_master_kill): it kills a master of a Redis Cluster, and the experiment's redis is one server (embedded): use redis: cluster, or redis_outage", ""},
		{"master kill, auto", "redis: auto\nfaults:\n  - {at: 1s, fault: redis_master_kill}\n",
			"faults.0 (redis_master_kill): it kills a master of a Redis Cluster", ""},
		{"outage, cluster", "redis: cluster\nfaults:\n  - {at: 1s, fault: redis_outage}\n",
			"line 5: faults.0 (redis_outage): it stops one Redis server, and the experiment's redis is a cluster: use redis_master_kill", ""},
		{"second step", "faults:\n  - {at: 1s, fault: node_kill, for: 2s}\n  - {at: 5s, fault: redis_outage, params: {for: 2s}}\n",
			"line 5: faults.1 (redis_outage): the experiment has no redis", "faults.0"},
		{"outage, external redis", "redis: redis://user:secret@10.0.0.5:6379/0\nfaults:\n  - {at: 1s, fault: redis_outage}\n",
			"line 5: faults.0 (redis_outage): the experiment's redis is external: the lab does not run it and cannot stop it", "secret"},
		{"unknown redis kind: reported at redis alone", "redis: maybe\nfaults:\n  - {at: 1s, fault: redis_outage}\n",
			"line 3: redis: \"maybe\"", "faults.0"},
		{"outage, redis auto", "redis: auto\nfaults:\n  - {at: 1s, fault: redis_outage}\n", "", ""},
		{"outage, redis server", "redis: server\nfaults:\n  - {at: 1s, fault: redis_outage}\n", "", ""},
		{"outage, redis embedded", "redis: embedded\nfaults:\n  - {at: 1s, fault: redis_outage}\n", "", ""},
		{"master kill, cluster", "redis: cluster\nfaults:\n  - {at: 1s, fault: redis_master_kill}\n", "", ""},
		{"node fault, no redis", "faults:\n  - {at: 1s, fault: node_kill, for: 2s}\n", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExperiment([]byte(head + tt.yaml))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "":
				return
			case err == nil:
				t.Fatalf("loads, want an error containing %q", tt.want)
			case !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q does not contain %q", err, tt.want)
			case tt.not != "" && strings.Contains(err.Error(), tt.not):
				t.Fatalf("error %q contains %q", err, tt.not)
			}
		})
	}
}
