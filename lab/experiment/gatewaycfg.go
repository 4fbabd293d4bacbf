package experiment

import (
	"github.com/levee-lab/levee/internal/wire"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/gateway"
)

// APIKeys are the API keys the generator sends per priority, derived from
// the lab's admin token; the generated gateway config maps each to a tenant
// of that priority.
func APIKeys(token string) map[string]string {
	suffix := token
	if len(suffix) > 8 {
		suffix = suffix[:8]
	}
	keys := map[string]string{}
	for _, p := range wire.Priorities() {
		keys[p] = "lab-" + strings.ToLower(p) + "-" + suffix
	}
	return keys
}

// GatewayParams is what varies between gateway configs of one lab.
type GatewayParams struct {
	Listen, Admin string // "127.0.0.1:0" on a first start
	Token         string
	Nodes         []string // node addresses
	Keys          map[string]string
	Defenses      map[string]bool // current switches (start from the experiment's)
	RedisURL      string          // "" for the in-process store
	Gateways      int             // how many gateways share limits
}

// GatewayConfig builds the YAML config of one gateway from the experiment
// and p: the lab's own keys, listeners and nodes; the experiment's
// defenses, limits (PUT /admin/limits shape), guard thresholds; then its
// raw overrides. The result is validated with gateway.ParseConfig, whose
// errors name the field.
func (e *Experiment) GatewayConfig(p GatewayParams) ([]byte, error) {
	keys := make([]any, 0, len(p.Keys))
	for _, pr := range priorities() {
		if k, ok := p.Keys[pr]; ok {
			keys = append(keys, map[string]any{"key": k, "tenant": "tenant-" + strings.ToLower(pr), "priority": pr})
		}
	}
	nodes := make([]any, len(p.Nodes))
	for i, n := range p.Nodes {
		nodes[i] = n
	}
	m := map[string]any{
		"listen":      p.Listen,
		"admin":       p.Admin,
		"admin_token": p.Token,
		"keys":        keys,
		"upstream":    map[string]any{"nodes": nodes},
	}
	if len(p.Defenses) > 0 {
		d := map[string]any{}
		for k, v := range p.Defenses {
			d[k] = v
		}
		m["defenses"] = d
	}
	// Each of N gateways owns 1/N of every limit when it decides alone: with
	// in-process stores always, with Redis while Redis is unreachable.
	store := map[string]any{}
	if p.RedisURL != "" {
		store["kind"], store["url"] = "redis", p.RedisURL
	}
	if p.Gateways > 1 {
		store["share"] = 1 / float64(p.Gateways)
	}
	if len(store) > 0 {
		MergeInto(m, map[string]any{"ratelimit": map[string]any{"store": store}})
	}
	lim, err := limitsToConfig(e.Gateway.Limits)
	if err != nil {
		return nil, err
	}
	MergeInto(m, lim)
	if len(e.Gateway.Guard) > 0 {
		MergeInto(m, map[string]any{"guard": cloneMap(e.Gateway.Guard)})
	}
	MergeInto(m, cloneMap(e.Gateway.Config))
	b, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	if _, err := gateway.ParseConfig(b); err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	return b, nil
}

// limitsToConfig turns a PUT /admin/limits body ({"classes":{"ai":{…,
// "queue_timeout_ms":500}},"token_budget":N,"ratelimit":{…}}) into config
// keys (queue_timeout as a duration).
func limitsToConfig(lim map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range lim {
		switch k {
		case "classes":
			cm, ok := v.(map[string]any)
			if !ok {
				return nil, errors.New("gateway.limits.classes: want a map of class → limits")
			}
			classes := map[string]any{}
			for name, cv := range cm {
				c, ok := cv.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("gateway.limits.classes.%s: want a map", name)
				}
				c = cloneMap(c)
				if ms, ok := c["queue_timeout_ms"]; ok {
					f, ok := toFloat(ms)
					if !ok {
						return nil, fmt.Errorf("gateway.limits.classes.%s.queue_timeout_ms: want a number", name)
					}
					delete(c, "queue_timeout_ms")
					c["queue_timeout"] = fmt.Sprintf("%gms", f)
				}
				classes[name] = c
			}
			out["classes"] = classes
		case "token_budget", "ratelimit":
			out[k] = cloneValue(v)
		default:
			return nil, fmt.Errorf("gateway.limits.%s: unknown (want classes, token_budget, ratelimit)", k)
		}
	}
	return out, nil
}

func toFloat(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case float64:
		return t, true
	case uint64:
		return float64(t), true
	}
	return 0, false
}

// MergeInto deep-merges src into dst: maps merge key by key, anything else
// replaces.
func MergeInto(dst, src map[string]any) {
	for k, v := range src {
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			MergeInto(dm, sm)
			continue
		}
		dst[k] = cloneValue(v)
	}
}

// validateNodeKnobs checks a knob patch the way a node would: decoded over
// the defaults with unknown names rejected, then validated.
func validateNodeKnobs(patch map[string]any) error {
	if len(patch) == 0 {
		return nil
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	k := fakemodel.DefaultKnobs()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		return err
	}
	return k.Validate()
}

// DefaultKnobMap is fakemodel's default knobs as a JSON object.
func DefaultKnobMap() map[string]any {
	b, _ := json.Marshal(fakemodel.DefaultKnobs())
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	return m
}
