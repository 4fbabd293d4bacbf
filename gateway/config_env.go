package gateway

import (
	"fmt"
	"slices"
	"strings"
)

// expandHeaderEnv replaces ${NAME} in the upstream headers' values with
// the environment variable NAME (lookup), so an API key stays out of the
// config file. An unset NAME, or a "${" not closed by a valid name and
// "}", is a *ConfigError naming the header: a request sent with an empty
// key would only fail later, at the backend, as a 401 on every call. An
// empty map becomes nil.
func expandHeaderEnv(headers map[string]string, lookup func(string) (string, bool)) (map[string]string, error) {
	if len(headers) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make(map[string]string, len(headers))
	for _, name := range names {
		v, err := expandEnv(headers[name], lookup)
		if err != nil {
			return nil, &ConfigError{Field: "upstream.headers." + name, Msg: err.Error()}
		}
		out[name] = v
	}
	return out, nil
}

// expandEnv replaces every ${NAME} in s by lookup(NAME). A "$" not
// followed by "{" is kept as it is.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q opens ${ without a closing }", s)
		}
		name := s[i+2 : i+end]
		if !envName(name) {
			return "", fmt.Errorf("${%s} is not an environment variable name", name)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// envName reports whether s is a shell variable name: [A-Za-z_][A-Za-z0-9_]*.
func envName(s string) bool {
	for i, r := range s {
		letter := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}
