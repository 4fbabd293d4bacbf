package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/internal/yamlstrict"
)

// Redis kinds: what `redis:` asks the lab for. The lab fails an
// experiment that asks for Redis and cannot get it; it never falls back to
// in-process limits behind the experiment's back.
const (
	// RedisOff: no Redis; each gateway keeps its limits in process (with
	// 1/N of each limit when there are N gateways).
	RedisOff = "off"
	// RedisAuto: a Redis-protocol server child — redis-server when it is on
	// PATH, else the embedded server (`levee redis`). Either is a real
	// process, so redis_outage is a real SIGKILL.
	RedisAuto = "auto"
	// RedisServer: a redis-server child; fails when it is not installed.
	RedisServer = "server"
	// RedisEmbedded: the embedded server child (`levee redis`), even when
	// redis-server is installed.
	RedisEmbedded = "embedded"
	// RedisCluster: a Redis Cluster of redis-server children (Masters
	// masters, Replicas replicas each); fails without redis-server.
	RedisCluster = "cluster"
	// RedisExternal: a Redis the lab does not run, at URL. Faults cannot
	// kill it.
	RedisExternal = "external"
)

// Cluster defaults (`redis: cluster`).
const (
	DefaultClusterMasters  = 3
	DefaultClusterReplicas = 1
	// MinClusterMasters: Redis Cluster needs a majority of masters to agree
	// that one failed.
	MinClusterMasters = 3
	// MaxClusterNodes bounds masters × (1 + replicas): every node is a
	// process on this machine.
	MaxClusterNodes = 12
)

// RedisKinds lists the kinds, for messages and documentation.
var RedisKinds = []string{RedisOff, RedisAuto, RedisServer, RedisEmbedded, RedisCluster, RedisExternal}

// RedisSpec is where the gateways keep shared rate limits. In YAML it is
// a word (off, auto, server, embedded, cluster), a URL (redis://,
// rediss://, unix://, redis+cluster://, redis+sentinel://: an external
// Redis), or a mapping:
//
//	redis: {kind: cluster, masters: 3, replicas: 1}
//	redis: {kind: external, url: "redis://10.0.0.5:6379/0"}
//
// The zero value means off.
type RedisSpec struct {
	Kind string `yaml:"kind" json:"kind"`
	// URL is the external Redis (kind external only).
	URL string `yaml:"url" json:"url,omitempty"`
	// Masters and Replicas shape a cluster (kind cluster only): at least
	// MinClusterMasters masters (default 3), each with Replicas replicas
	// (default 1; 0 leaves a killed master's slots unserved until it
	// returns).
	Masters  int  `yaml:"masters" json:"masters,omitempty"`
	Replicas *int `yaml:"replicas" json:"replicas,omitempty"`
}

// Enabled reports whether the gateways use Redis.
func (r RedisSpec) Enabled() bool { return r.Kind != "" && r.Kind != RedisOff }

// LabRuns reports whether the lab runs this Redis itself — a server child
// (auto, server, embedded) or a cluster — as the supervisor's startRedis
// decides: off and an external Redis start nothing, so no fault can stop
// them.
func (r RedisSpec) LabRuns() bool {
	switch r.Kind {
	case RedisAuto, RedisServer, RedisEmbedded, RedisCluster:
		return true
	}
	return false
}

// ClusterReplicas is the number of replicas per master of a cluster spec
// (DefaultClusterReplicas when unset).
func (r RedisSpec) ClusterReplicas() int {
	if r.Replicas == nil {
		return DefaultClusterReplicas
	}
	return *r.Replicas
}

// String is the spec as it would be written in YAML: the word, the URL, or
// "cluster (3 masters × 1 replica)".
func (r RedisSpec) String() string {
	switch r.Kind {
	case "":
		return RedisOff
	case RedisExternal:
		return r.URL
	case RedisCluster:
		return fmt.Sprintf("cluster (%d masters, %d replica(s) each)", max(r.Masters, DefaultClusterMasters), r.ClusterReplicas())
	}
	return r.Kind
}

func (r RedisSpec) clone() RedisSpec {
	if r.Replicas != nil {
		n := *r.Replicas
		r.Replicas = &n
	}
	return r
}

// redisURLSchemes are the URL forms of an external Redis
// (gateway/ratelimit.OpenRedis).
var redisURLSchemes = []string{"redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://", "redis+sentinel://", "rediss+sentinel://"}

func isRedisURL(s string) bool {
	for _, p := range redisURLSchemes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// fromWord reads the scalar form: a kind or a URL. Anything else is kept
// as the kind, for Normalize to reject with the field's line.
func redisFromWord(s string) RedisSpec {
	s = strings.TrimSpace(s)
	if isRedisURL(s) {
		return RedisSpec{Kind: RedisExternal, URL: s}
	}
	return RedisSpec{Kind: s}
}

// redisFields is the mapping form, decoded strictly.
type redisFields struct {
	Kind     string `yaml:"kind" json:"kind"`
	URL      string `yaml:"url,omitempty" json:"url,omitempty"`
	Masters  int    `yaml:"masters,omitempty" json:"masters,omitempty"`
	Replicas *int   `yaml:"replicas,omitempty" json:"replicas,omitempty"`
}

// UnmarshalYAML reads a word, a URL or a mapping; unknown keys of the
// mapping are errors naming the line.
func (r *RedisSpec) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*r = redisFromWord(n.Value)
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch k := n.Content[i]; k.Value {
			case "kind", "url", "masters", "replicas":
			default:
				return fmt.Errorf("line %d: redis: field %s not found (known: kind, url, masters, replicas)", k.Line, k.Value)
			}
		}
		var f redisFields
		if err := n.Decode(&f); err != nil {
			return fmt.Errorf("line %d: redis: %w", n.Line, err)
		}
		var ye *yamlstrict.Error
		if err := yamlstrict.CheckIntegers(n, &f); errors.As(err, &ye) {
			return fmt.Errorf("line %d: redis.%s: %s", ye.Line, ye.DottedPath(), ye.Msg)
		}
		*r = RedisSpec(f)
		if r.Kind == "" && r.URL != "" {
			r.Kind = RedisExternal
		}
		return nil
	}
	return fmt.Errorf("line %d: redis: want one of %s, a redis:// URL or a mapping {kind: …}", n.Line, strings.Join(RedisKinds, ", "))
}

// MarshalYAML writes the word or URL when that says it all, else the
// mapping.
func (r RedisSpec) MarshalYAML() (any, error) {
	if w, ok := r.word(); ok {
		return w, nil
	}
	return redisFields(r), nil
}

// word is the scalar form of r, when it has one.
func (r RedisSpec) word() (string, bool) {
	switch {
	case r.Kind == "":
		return RedisOff, true
	case r.Kind == RedisExternal:
		return r.URL, r.Masters == 0 && r.Replicas == nil
	case r.Kind == RedisCluster:
		return r.Kind, (r.Masters == 0 || r.Masters == DefaultClusterMasters) && (r.Replicas == nil || *r.Replicas == DefaultClusterReplicas)
	}
	return r.Kind, r.URL == "" && r.Masters == 0 && r.Replicas == nil
}

// MarshalJSON writes the word or URL when that says it all (as run.json
// files written before the mapping form have it), else the object.
func (r RedisSpec) MarshalJSON() ([]byte, error) {
	if w, ok := r.word(); ok {
		return json.Marshal(w)
	}
	return json.Marshal(redisFields(r))
}

// UnmarshalJSON reads either form.
func (r *RedisSpec) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*r = redisFromWord(s)
		return nil
	}
	var f redisFields
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	*r = RedisSpec(f)
	return nil
}

// normalizeRedis fills the defaults of `redis:` and validates it.
func (e *Experiment) normalizeRedis(p *problems) {
	r := &e.Redis
	if r.Kind == "" {
		if r.URL != "" {
			r.Kind = RedisExternal
		} else {
			r.Kind = RedisOff
		}
	}
	if !contains(RedisKinds, r.Kind) {
		p.add("redis", "%q: want one of %s, a redis:// URL (%s) or a mapping {kind: …}", r.Kind, strings.Join(RedisKinds, ", "), strings.Join(redisURLSchemes, " "))
		return
	}
	if r.Kind == RedisExternal {
		if !isRedisURL(r.URL) {
			p.add("redis.url", "%q: want a URL starting with one of %s", r.URL, strings.Join(redisURLSchemes, " "))
		}
	} else if r.URL != "" {
		p.add("redis.url", "only for kind %s (kind %s starts its own Redis)", RedisExternal, r.Kind)
	}
	if r.Kind != RedisCluster {
		if r.Masters != 0 || r.Replicas != nil {
			p.add("redis", "masters and replicas are only for kind %s", RedisCluster)
		}
		return
	}
	if r.Masters == 0 {
		r.Masters = DefaultClusterMasters
	}
	if r.Replicas == nil {
		n := DefaultClusterReplicas
		r.Replicas = &n
	}
	switch {
	case r.Masters < MinClusterMasters:
		p.add("redis.masters", "%d: want ≥ %d (a failure needs a majority of masters to agree)", r.Masters, MinClusterMasters)
	case *r.Replicas < 0:
		p.add("redis.replicas", "%d: want ≥ 0", *r.Replicas)
	case r.Masters*(1+*r.Replicas) > MaxClusterNodes:
		p.add("redis", "%d masters × (1 + %d replicas) = %d processes, want ≤ %d", r.Masters, *r.Replicas, r.Masters*(1+*r.Replicas), MaxClusterNodes)
	}
}
