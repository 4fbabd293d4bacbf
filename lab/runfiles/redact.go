package runfiles

import (
	"net/url"
	"strings"
)

// Redacted stands in for a secret in run.json.
const Redacted = "(redacted)"

// secretKeys are config keys whose values are secrets wherever they sit.
var secretKeys = map[string]bool{"admin_token": true, "token": true, "password": true, "key": true}

// redactRunInfo returns info without its secrets: the API keys (they carry
// part of the admin token), any admin token or password in the gateway
// config and the experiment's raw sections, and the password of every
// URL (a Redis URL with credentials). The original is not modified.
func redactRunInfo(info RunInfo) RunInfo {
	if info.Experiment != nil {
		e := info.Experiment.Clone()
		e.Redis = redactURL(e.Redis)
		e.Gateway.Config = redactMap(e.Gateway.Config)
		e.Gateway.Limits = redactMap(e.Gateway.Limits)
		info.Experiment = e
	}
	r := &info.Resolved
	r.Redis = redactURL(r.Redis)
	r.GatewayConfig = redactMap(r.GatewayConfig)
	if r.Keys != nil {
		keys := make(map[string]string, len(r.Keys))
		for p := range r.Keys {
			keys[p] = Redacted
		}
		r.Keys = keys
	}
	args := make([]string, len(info.Args))
	for i, a := range info.Args {
		args[i] = redactURL(a)
	}
	info.Args = args
	return info
}

// redactMap returns a copy of m with secret keys' values and URL
// passwords replaced.
func redactMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if secretKeys[k] {
			if s, ok := v.(string); !ok || s != "" {
				v = Redacted
			}
		}
		out[k] = redactValue(v)
	}
	return out
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return redactMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e)
		}
		return out
	case string:
		return redactURL(x)
	}
	return v
}

// redactURL replaces the password of a URL with "xxxxx" (url.URL.Redacted);
// anything that is not such a URL is returned as it is.
func redactURL(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	return u.Redacted()
}
