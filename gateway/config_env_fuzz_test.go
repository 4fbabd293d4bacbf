package gateway

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzExpandEnv: expandEnv replaces exactly the ${NAME} references a
// regular expression finds, each by its value, and refuses a template
// with any other "${" (unclosed, or not a name); a value is never
// expanded again. It never panics.
func FuzzExpandEnv(f *testing.F) {
	for _, s := range []string{"Bearer ${OPENAI_API_KEY}", "${A}${B}", "$${A}", "${", "${}", "${A-B}", "${A${B}}", "$A ${_x1}}", "a}b${A}"} {
		f.Add(s)
	}
	ref := regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)
	lookup := func(name string) (string, bool) { return "<" + name + "$" + "{x}>", true }
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "\x00") {
			return // the marker below
		}
		got, err := expandEnv(s, lookup)
		want := ref.ReplaceAllStringFunc(s, func(m string) string {
			v, _ := lookup(m[2 : len(m)-1])
			return strings.ReplaceAll(v, "${", "\x00") // mark the values' own "${"
		})
		if strings.Contains(want, "${") {
			if err == nil {
				t.Fatalf("%q: accepted as %q", s, got)
			}
			return
		}
		want = strings.ReplaceAll(want, "\x00", "${")
		if err != nil || got != want {
			t.Fatalf("%q: got %q, %v; want %q", s, got, err, want)
		}
	})
}
