package supervisor

import (
	"os"
	"strings"
)

// childEnvNames are the variables a child may inherit from the lab: where
// to find programs and write temporary files, the locale and time zone,
// and the Go runtime's own knobs (so a lab run under GOMAXPROCS=2 or with
// coverage on passes them down). Nothing else — no credentials, no
// tokens, no proxy settings: a child gets its admin token explicitly.
var childEnvNames = []string{
	"PATH", "TMPDIR", "TZ", "LANG", "LC_ALL",
	"GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG", "GOTRACEBACK", "GORACE", "GOCOVERDIR",
}

// ChildEnv is the environment of a child process: the allowed variables
// of the lab's own environment, then extra ("NAME=value").
func ChildEnv(extra ...string) []string {
	env := make([]string, 0, len(childEnvNames)+len(extra))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, ok := range childEnvNames {
			if name == ok {
				env = append(env, kv)
				break
			}
		}
	}
	return append(env, extra...)
}
