package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/fakemodel"
	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/internal/wire"
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

// GatewayConfig builds one gateway's config: a typed gateway.Config with
// the lab's own listeners, admin token, keys, nodes, defenses and
// rate-limit store, onto which the experiment's sections that are raw by
// design are merged (limits in the PUT /admin/limits shape, guard
// thresholds, then the raw config overrides). It returns the validated
// config and the YAML document the gateway reads (every key, durations as
// text). Errors name the field (gateway.ConfigError).
func (e *Experiment) GatewayConfig(p GatewayParams) (gateway.Config, []byte, error) {
	c := gateway.DefaultConfig()
	c.Listen, c.Admin, c.AdminToken = p.Listen, p.Admin, p.Token
	c.Keys = nil
	for _, pr := range priorities() {
		if k, ok := p.Keys[pr]; ok {
			c.Keys = append(c.Keys, gateway.KeyConfig{Key: k, Tenant: "tenant-" + strings.ToLower(pr), Priority: pr})
		}
	}
	c.Upstream.Nodes = append([]string(nil), p.Nodes...)
	if e.Nodes.MaxTokens > 0 { // the gateway passes what the nodes take
		c.MaxTokensLimit = e.Nodes.MaxTokens
	}
	for name, on := range p.Defenses {
		if !c.Defenses.Set(name, on) {
			return gateway.Config{}, nil, &gateway.ConfigError{Field: "defenses." + name, Msg: "unknown defense"}
		}
	}
	if p.RedisURL != "" {
		c.RateLimit.Store.Kind, c.RateLimit.Store.URL = wire.StoreRedis, p.RedisURL
	}
	// Each of N gateways owns 1/N of every limit when it decides alone: with
	// in-process stores always, with Redis while Redis is unreachable.
	if p.Gateways > 1 {
		c.RateLimit.Store.Share = 1 / float64(p.Gateways)
	}
	m := yamlObject(reflect.ValueOf(c)).(map[string]any)
	lim, err := limitsToConfig(e.Gateway.Limits)
	if err != nil {
		return gateway.Config{}, nil, err
	}
	MergeInto(m, lim)
	if len(e.Gateway.Guard) > 0 {
		MergeInto(m, map[string]any{"guard": cloneMap(e.Gateway.Guard)})
	}
	MergeInto(m, cloneMap(e.Gateway.Config))
	doc, err := yaml.Marshal(m)
	if err != nil {
		return gateway.Config{}, nil, fmt.Errorf("gateway config: %w", err)
	}
	cfg, err := gateway.ParseConfig(doc)
	if err != nil {
		return gateway.Config{}, nil, fmt.Errorf("gateway config: %w", err)
	}
	return cfg, doc, nil
}

// yamlObject turns a config value into the YAML object it is written as:
// structs become maps keyed by their yaml tags, durations text ("500ms").
func yamlObject(v reflect.Value) any {
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		m := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			m[name] = yamlObject(v.Field(i))
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return []any{}
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = yamlObject(v.Index(i))
		}
		return out
	case reflect.Map:
		m := map[string]any{}
		for _, k := range v.MapKeys() {
			m[fmt.Sprint(k.Interface())] = yamlObject(v.MapIndex(k))
		}
		return m
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return yamlObject(v.Elem())
	}
	return v.Interface()
}

// limitsToConfig turns a PUT /admin/limits body ({"classes":{"ai":{…,
// "queue_timeout_ms":500}},"token_budget":N,"max_subcalls_inflight":N,
// "ratelimit":{…}}) into config keys (queue_timeout as a duration,
// max_subcalls_inflight under agent).
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
		case "max_subcalls_inflight":
			out["agent"] = map[string]any{k: cloneValue(v)}
		default:
			return nil, fmt.Errorf("gateway.limits.%s: unknown (want classes, token_budget, max_subcalls_inflight, ratelimit)", k)
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
